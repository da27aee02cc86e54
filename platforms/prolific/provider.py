"""Prolific: the provider, and the rules of a Prolific study (its fields, places, codes, groups, rejections).

Reads of this app's models are allowed here (places are counted from the batch's assignments);
writes are not: the services record what the provider did.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator
from decimal import Decimal

from django.conf import settings

from annotation.crowd.costs import Cost
from annotation.crowd.providers.base import CrowdProvider, RemoteAssignment, register
from annotation.crowd.providers.options import BatchOption, OptionError
from annotation.models import Assignment, Batch, Hit, Provider, WorkerIdentity
from core.errors import ServiceError
from platforms.prolific import prices
from platforms.prolific.client import Prolific, ProlificError, ProlificUnknownOutcome, cents
from platforms.prolific.selectors import PlaceCount, count_places, submissions
from platforms.prolific.study_options import BY_NAME, OPTION_KEYS, OPTIONS

#: Prolific's ids (participant, study, session): 24 lowercase hex characters. A study link with
#: anything else is refused without asking Prolific.
PROLIFIC_ID = re.compile(r"[0-9a-f]{24}")  # used with fullmatch


CONTACT = " If you think this is a mistake, please message us through Prolific."


#: Added to rejections for the answers given, so the participant understands them (Prolific wants 100+ characters).
REJECTION_CONTEXT = (
    " The study asked you to label search queries; some had a known answer, used to check that the"
    " instructions were followed." + CONTACT
)


NO_WORK_MESSAGE = (
    "We received your completion on Prolific, but no answers to the queries of this study were recorded"
    " for your session on our site, so there is no work to pay for."
)


def check_known(options: dict, what: str, keys: set[str], checked: tuple[BatchOption, ...]) -> None:
    """Refuse keys none of a platform's options has, and values the ``checked`` options' own checks refuse,
    whoever built the options (Prolific's and Task Builder's)."""
    unknown = set(options) - keys
    if unknown:
        raise ServiceError(f"unknown {what} option(s): {', '.join(sorted(unknown))}")
    for option in checked:
        try:
            option.parse(options.get(option.name))
        except OptionError as exc:
            raise ServiceError(str(exc)) from None


def validate_options(options: dict) -> None:
    """Refuse Prolific settings the API would refuse, before the batch is created."""
    check_known(options, "Prolific", OPTION_KEYS, (BY_NAME["estimated_minutes"], BY_NAME["devices"]))
    for key, flag in (("exclude_batches", "--exclude-batch"), ("allow_batches", "--allow-batch")):
        for name in options.get(key, []):
            if not Batch.objects.filter(name=name).exists():
                raise ServiceError(f"{flag} {name!r}: no such batch")
    both = set(options.get("allow_batches", [])) & set(options.get("exclude_batches", []))
    if both:
        raise ServiceError(f"a batch cannot be both allowed and excluded: {', '.join(sorted(both))}")
    # The bonus rule or the older flat bonus; its bound needs the gold questions (BatchSettings.validate).
    from annotation.crowd.bonus_rules import RuleError, rule_of_options

    try:
        rule_of_options(options)
    except RuleError as exc:
        raise ServiceError(str(exc)) from None


#: Letters and digits that cannot be mistaken for each other; 10 of them are 50 random bits.
CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"


CODE_LENGTH = 10


def new_completion_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def completion_code(batch: Batch) -> str:
    """The study's completion code, random and made with the batch: never derived from what anyone could guess."""
    code = batch.provider_options.get("completion_code")
    if not code:
        raise ServiceError(f"batch {batch.name!r} has no completion code; it was not made as a Prolific batch")
    return code


#: Why the study's return code asks Prolific to return a participant (``RequestReturn.return_reason``).
NO_TASK_REASON = "No task was free on the study's site when you arrived; you are not penalised."


def return_code(batch: Batch) -> str:
    """The study's return code (random, made with the batch; ``""`` for an older batch)."""
    return (batch.provider_options or {}).get("return_code", "")


def completion_codes(batch: Batch) -> list[dict]:
    """The completion code (reviewed by hand) and the return code (Prolific asks for a return: no task)."""
    codes = [{"code": completion_code(batch), "code_type": "COMPLETED", "actions": [{"action": "MANUALLY_REVIEW"}]}]
    if return_code(batch):
        codes.append(
            {
                "code": return_code(batch),
                "code_type": "OTHER",
                "actions": [{"action": "REQUEST_RETURN", "return_reason": NO_TASK_REASON}],
            }
        )
    return codes


def study_url(batch: Batch) -> str:
    """The external study URL with Prolific's placeholders as URL parameters."""
    from django.urls import reverse

    path = reverse("annotation:prolific-start", args=[batch.name])
    return (
        f"{settings.SITE_URL.rstrip('/')}{path}"
        "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
    )


def total_places(batch: Batch) -> int:
    return sum(batch.hits.values_list("max_assignments", flat=True))


def study_fields(batch: Batch, provider: ProlificProvider) -> dict:
    """The body of ``POST /studies/`` for the batch (a draft; published by ``launch``)."""
    from platforms.prolific.connection.selectors import prolific_settings

    connection = prolific_settings()
    if not connection.project_id:
        raise ServiceError(
            "PROLIFIC_PROJECT_ID is not set (in the environment or on the Connections page): the id of the "
            "Prolific project that holds the studies"
        )
    if connection.api_url.startswith("https://api.prolific.com") and not settings.SITE_URL.startswith("https://"):
        raise ServiceError(
            f"SITE_URL is {settings.SITE_URL!r}: participants on Prolific need this site's public https address"
        )

    options = batch.provider_options
    minutes = int(options.get("estimated_minutes", 10))
    groups = exclusion_groups(batch, provider)
    filters = list(options.get("filters", []))
    # Participant groups across waves: made beforehand by groups.services.prepare_groups.
    waves = study_groups(batch)
    groups += [g for g in waves["blocklist"] if g not in groups]
    if groups:
        filters.append({"filter_id": "participant_group_blocklist", "selected_values": groups})
    if waves["allowlist"]:
        filters.append({"filter_id": "participant_group_allowlist", "selected_values": waves["allowlist"]})
    fields = {
        "name": batch.title,
        "internal_name": provider.internal_name(batch),
        "description": batch.description,
        "external_study_url": study_url(batch),
        "prolific_id_option": "url_parameters",
        "completion_codes": completion_codes(batch),
        "total_available_places": total_places(batch),
        "estimated_completion_time": minutes,
        "maximum_allowed_time": max(minutes * 3, int(batch.assignment_duration.total_seconds() // 60)),
        "reward": cents(batch.reward),
        "device_compatibility": list(options.get("devices") or ["desktop"]),
        "filters": filters,
        "project": connection.project_id,
    }
    if options.get("signed_urls"):
        if not connection.workspace_id:
            raise ServiceError(
                "PROLIFIC_WORKSPACE_ID is not set: a signed study link is checked against the workspace it names"
            )
        # Prolific signs the URL's parameters into ``prolific_token``; study_tokens checks it.
        fields["is_external_study_url_secure"] = True
    return fields


# -- participant groups ------------------------------------------------------------------
BLOCKED_GROUP = "blocked participants"


def group_id(provider: ProlificProvider, name: str) -> str:
    """The id of the workspace's group called ``name``; created when missing (looked up first)."""
    from platforms.prolific.connection.selectors import prolific_settings

    workspace = prolific_settings().workspace_id
    if not workspace:
        raise ServiceError("PROLIFIC_WORKSPACE_ID is not set: participant groups belong to a Prolific workspace")
    found = provider.client.find_group(workspace, name)
    return found["id"] if found else provider.client.create_group(workspace, name)["id"]


def exclusion_groups(batch: Batch, provider: ProlificProvider) -> list[str]:
    """Groups whose members may not take the study: blocked participants, and earlier batches' ones."""
    blocked = list(
        WorkerIdentity.objects.filter(provider=Provider.PROLIFIC, worker__blocked=True).values_list(
            "external_id", flat=True
        )
    )
    if not blocked:
        return []
    group = group_id(provider, BLOCKED_GROUP)
    provider.client.add_to_group(group, blocked)
    return [group]


#: The workspace-wide block-list of participants who failed a batch's gold threshold.
GOLD_FAILED_GROUP = "failed gold checks"


def study_groups(batch: Batch) -> dict[str, list[str]]:
    """The group ids a study filters on, ``{"blocklist", "allowlist"}``: the batch's own groups and, unless
    it has ``admit_gold_failures``, the failed-gold group."""
    from platforms.prolific.models import ParticipantGroup

    own = ParticipantGroup.objects.filter(batch=batch, deleted=False).exclude(group_id="")
    blocklist = [g.group_id for g in own if g.role == ParticipantGroup.Role.EXCLUDE]
    allowlist = [g.group_id for g in own if g.role == ParticipantGroup.Role.ALLOW]
    if not (batch.provider_options or {}).get("admit_gold_failures"):
        gold = ParticipantGroup.objects.filter(name=GOLD_FAILED_GROUP, deleted=False).exclude(group_id="").first()
        if gold is not None:
            blocklist.append(gold.group_id)
    return {"blocklist": blocklist, "allowlist": allowlist}


RETURN_MESSAGE = "Please return the study on Prolific; you will not be penalised."


def return_url() -> str:
    """Where a participant returns a study: Prolific's participant site (the completion URL's host)."""
    from urllib.parse import urlsplit

    parts = urlsplit(settings.PROLIFIC_COMPLETION_URL)
    return f"{parts.scheme}://{parts.netloc}/" if parts.scheme and parts.netloc else "https://app.prolific.com/"


def completion_url(batch: Batch) -> str:
    return f"{settings.PROLIFIC_COMPLETION_URL}{completion_code(batch)}"


def no_task_url(batch: Batch) -> str:
    """Where a participant with no task goes: the completion URL with the return code (else Prolific's site)."""
    code = return_code(batch)
    return f"{settings.PROLIFIC_COMPLETION_URL}{code}" if code else return_url()


# -- reviewing ------------------------------------------------------------------------------
def rejection_for(assignment: Assignment, feedback: str) -> tuple[str, str]:
    """Prolific's rejection category and a message the participant can understand (100+ characters)."""
    if assignment.gold_passed is False:
        category = "FAILED_CHECK"
        text = feedback or "Too many of the check questions with a known answer were answered wrongly."
    elif assignment.submitted_at is None:
        return "NO_DATA", NO_WORK_MESSAGE + CONTACT
    else:
        category = "LOW_EFFORT"
        text = feedback or "Some queries were left without a usable answer."
    return category, (text.rstrip() + REJECTION_CONTEXT)[:2000]


def raise_places(batch: Batch, provider: ProlificProvider, submissions=None) -> tuple[int, PlaceCount, str]:
    """Raise the study's places to one per task left for newcomers (:meth:`PlaceCount.wanted`; Prolific lets a
    published study's places only be raised); the total in force, the count and the study's status."""
    study_id = batch.hit_type_id
    if submissions is None:
        submissions = list(provider.client.submissions(study_id))
    count = count_places(batch, submissions)
    study = provider.client.get_study(study_id)
    total = int(study.get("total_available_places") or 0)
    if batch.status == Batch.Status.PUBLISHED and count.wanted() > total:
        provider.client.set_places(study_id, count.wanted())
        total = count.wanted()
    return total, count, study.get("status", "")


def api_client(client_class: type[Prolific] = Prolific, **options) -> Prolific:
    """A ``client_class`` client as configured, all the site's calls paced by ``PROLIFIC_API_CALLS_PER_SECOND``
    (docs/prolific.md, "The pace of all calls"); ``options``: the client's."""
    from core.services.ratelimit import shared_pace
    from platforms.prolific.connection.selectors import prolific_settings

    connection = prolific_settings()
    pace = shared_pace("prolific-api", settings.PROLIFIC_API_CALLS_PER_SECOND)
    return client_class(connection.api_url, connection.token, pace=pace, **options)


def _account_rate(given: Decimal | None) -> Decimal:
    """The account's fee rate: the one given, else ``settings.PROLIFIC_FEE_RATE`` (academic by default)."""
    return Decimal(settings.PROLIFIC_FEE_RATE) if given is None else Decimal(given)


@register("prolific")
class ProlificProvider(CrowdProvider):
    """Prolific: one study per batch; participants arrive by the study URL, take a HIT from the in-house
    hand-out, answer on this site and go back with the completion code; the sync reconciles submissions."""

    label = "Prolific"
    short_label = "Prolific"
    answers_on_site = True
    batch_options = (*CrowdProvider.batch_options, *OPTIONS)
    assignments_per_participant = 1
    bonus_charges = "bulk"
    pays_bonus_rules = True
    trains_workers = True  # participants take the training step on this site before the study's HIT

    @classmethod
    def new_batch_options(cls, options: dict) -> dict:
        """The study's completion code, random, never derived (:func:`completion_code`), unless given."""
        options = {**options}
        for code in ("completion_code", "return_code"):
            options[code] = options.get(code) or new_completion_code()
        if "signed_urls" not in options and settings.PROLIFIC_SIGNED_URLS:
            options["signed_urls"] = True
        return options

    @classmethod
    def work_cost(cls, reward: Decimal, count: int, *, account_fee_rate: Decimal | None = None, **_: object) -> Cost:
        """Prolific's platform fee: a share of the total paid (33.3% for academic accounts), rounded once."""
        return prices.work_cost(reward, count, _account_rate(account_fee_rate))

    @classmethod
    def bonus_fees(cls, paid: list[Decimal], *, account_fee_rate: Decimal | None = None) -> tuple[Decimal, Decimal]:
        """The same share on bonuses, on the total."""
        return prices.bonus_fees(paid, _account_rate(account_fee_rate))

    @classmethod
    def pay_figures(cls, batch: Batch, done) -> dict:
        """The batch page's figures: the reward over the time Prolific measured (its submissions)."""
        listed = submissions(batch)
        return {
            "median_seconds": listed.median_seconds,
            "median_hourly_rate": listed.median_hourly_rate,
            "rate_source": f"from Prolific's records of {listed.total} submission{'s' if listed.total != 1 else ''}",
            "estimated_minutes": (batch.provider_options or {}).get("estimated_minutes"),
        }

    @classmethod
    def check_settings(cls, batch_settings) -> None:
        if batch_settings.provider_options:
            validate_options(batch_settings.provider_options)

    def __init__(self, client=None) -> None:
        if client is None:
            client = api_client()
        self.client = client
        self._stopped: set[str] = set()

    @staticmethod
    def internal_name(batch: Batch) -> str:
        """How the study is found again on Prolific: unique per batch ever made on this site."""
        return f"{batch.name} ({batch.pk}, {batch.created:%Y%m%dT%H%M%S})"

    def prepare(self, batch: Batch) -> str:
        """Create the batch's draft study; its id. After an earlier attempt (``prepare_attempted``) it is
        looked up by internal name first: a lost answer may hide a study that exists."""
        from platforms.prolific.connection.selectors import prolific_settings

        project = prolific_settings().project_id
        if batch.prepare_attempted is not None:
            found = self.client.find_study(project, self.internal_name(batch))
            if found is not None:
                return found["id"]
        return self.client.create_study(study_fields(batch, self))["id"]

    def launch(self, batch: Batch) -> None:
        """Publish the study unless it already is (a repeated publish after a lost answer is skipped)."""
        transition_study(self.client, batch.hit_type_id, "PUBLISH", when=("UNPUBLISHED",))

    def stop_study(self, study_id: str) -> bool:
        """Stop the study (once, and only if it is running); whether this call stopped it."""
        if study_id in self._stopped:
            return False
        stopped = transition_study(self.client, study_id, "STOP", when=("ACTIVE", "PAUSED"))
        self._stopped.add(study_id)
        return stopped

    def publish_hit(self, hit: Hit, question_html: str) -> str:
        return f"prolific-{hit.unique_token}"

    def fetch_assignments(self, hit: Hit) -> Iterator[RemoteAssignment]:
        return iter(())  # answers arrive on the site; submissions are reconciled per study

    def approve(self, assignment: Assignment, feedback: str = "") -> bool:
        self.client.approve(assignment.provider_assignment_id)
        return True

    def reject(self, assignment: Assignment, feedback: str) -> bool:
        category, message = rejection_for(assignment, feedback)
        self.client.reject(assignment.provider_assignment_id, category, message)
        return True

    def add_assignments(self, hit: Hit, count: int, unique_token: str) -> None:
        """Places for every free place of the batch's HITs (callers raise ``max_assignments`` first): a total
        from the state, not ``+ count``, so a repeated call never adds places twice (:func:`raise_places`)."""
        raise_places(hit.batch, self)

    def expire(self, hit: Hit) -> None:
        """Stop the study (once per batch, and only if it is running)."""
        if hit.batch.hit_type_id:
            self.stop_study(hit.batch.hit_type_id)

    blocks_remotely = True

    def block_worker(self, external_id: str, reason: str) -> None:
        """Add the participant to the workspace's blocked group, which every study of this site excludes."""
        self.client.add_to_group(group_id(self, BLOCKED_GROUP), [external_id])


def transition_study(client: Prolific, study_id: str, action: str, *, when: tuple[str, ...]) -> bool:
    """Transition the study if its status is one of ``when``, looking again after a lost answer (no request
    token); whether this call made it. Task Builder's studies transition the same way."""
    for _ in range(3):
        if client.get_study(study_id).get("status") not in when:
            return False
        try:
            client.transition_study(study_id, action)
            return True
        except ProlificUnknownOutcome:
            continue  # it may have happened: the status says
    if client.get_study(study_id).get("status") not in when:
        return True  # the last lost answer hid a success
    # Not done: returning quietly would let a cancel report a study stopped that still runs.
    raise ProlificError(f"Prolific did not {action} study {study_id}: three attempts lost their answer", upstream=True)
