"""The settings of a batch, declared once: what ``create_batch`` takes and the rules it checks.

:class:`BatchSettings` is what the batch form (page and API) and ``manage.py create_batch``
build and :func:`annotation.crowd.services.batches.create_batch` records on the ``Batch``;
``BatchSettings.validate`` refuses, before anything is created or paid for, what a
provider would refuse. ``tests/annotation/crowd/test_batch_settings.py`` holds the form, the
command's options and the model's columns to this declaration.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.conf import settings as django_settings

from annotation.models import Provider
from core.errors import ServiceError

#: MTurk's limits on the durations a HIT type and a HIT accept (seconds).
MIN_LIFETIME = 30
MAX_LIFETIME = 365 * 24 * 3600
MAX_AUTO_APPROVAL_DELAY = 30 * 24 * 3600
#: How long MTurk waits before approving (and paying) an assignment nobody reviewed: long
#: enough for several syncs (``settings.MTURK_SYNC_INTERVAL_SECONDS``, a day by default)
#: to reject invalid work first.
DEFAULT_AUTO_APPROVAL_DELAY = dt.timedelta(days=3)
QUALIFICATION_KEYS = {"locales", "min_approval_rate", "min_approved_hits", "masters"}
#: The largest reward per assignment (what ``Batch.reward`` holds: 8 digits, 2 decimals).
MAX_REWARD = "999999.99"


@dataclass(frozen=True)
class GoldQuery:
    """A query whose label is known, mixed into HITs to catch careless work."""

    qid: str
    text: str
    label: str


@dataclass
class BatchSettings:
    provider: str = Provider.LOCAL
    assignments_per_query: int = 3
    queries_per_hit: int = 10
    reward: Decimal = Decimal("0.05")
    lifetime: dt.timedelta = dt.timedelta(days=7)
    assignment_duration: dt.timedelta = dt.timedelta(minutes=30)
    auto_approval_delay: dt.timedelta = DEFAULT_AUTO_APPROVAL_DELAY
    qualifications: dict = field(default_factory=dict)
    gold_per_hit: int = 0
    gold_pass_fraction: float = 1.0
    gold_feedback: bool = True
    seed: int = 0
    #: Prolific: estimated_minutes, devices, filters, bonus, exclude_batches, completion_code.
    provider_options: dict = field(default_factory=dict)
    #: Quality thresholds applied at every sync (see annotation.quality.services.thresholds); None: off.
    warn_gold_accuracy: float | None = None
    block_gold_accuracy: float | None = None
    warn_agreement: float | None = None
    block_agreement: float | None = None
    min_answers_judged: int = 10
    #: USD re-offers and escalations may add to the estimate (annotation.quality.services.budget); None: no limit.
    extra_budget: Decimal | None = None
    #: Share of the training queries (create_batch's ``training``) a worker must get right first.
    training_pass_fraction: float = 0.8

    def validate(self) -> None:
        """Refuse settings MTurk would refuse, before anything is created or paid for."""
        if self.provider not in Provider.values:
            raise ServiceError(f"unknown provider {self.provider!r}; choose one of {', '.join(Provider.values)}")
        if self.assignments_per_query < 1:
            raise ServiceError("assignments per HIT must be at least 1")
        if not 1 <= self.queries_per_hit <= 100:
            raise ServiceError("queries per HIT must be between 1 and 100")
        check_amount(self.reward, "reward", minimum="0.01", maximum=MAX_REWARD)
        for name, value, low, high in (
            ("lifetime", self.lifetime, MIN_LIFETIME, MAX_LIFETIME),
            ("assignment duration", self.assignment_duration, MIN_LIFETIME, MAX_LIFETIME),
            ("auto-approval delay", self.auto_approval_delay, 0, MAX_AUTO_APPROVAL_DELAY),
        ):
            if not low <= value.total_seconds() <= high:
                raise ServiceError(f"{name} must be between {low} s and {high} s (got {value})")
        interval = dt.timedelta(seconds=django_settings.MTURK_SYNC_INTERVAL_SECONDS)
        if self.provider == Provider.MTURK and self.auto_approval_delay <= interval:
            raise ServiceError(
                f"auto-approval delay must be longer than the sync interval ({interval}, setting "
                f"MTURK_SYNC_INTERVAL_SECONDS; got {self.auto_approval_delay}): MTurk approves and pays "
                "every assignment not reviewed by then, however invalid"
            )
        unknown = set(self.qualifications) - QUALIFICATION_KEYS
        if unknown:
            raise ServiceError(f"unknown qualification setting(s): {', '.join(sorted(unknown))}")
        if self.qualifications and self.provider != Provider.MTURK:
            raise ServiceError("qualifications only apply to the mturk provider")
        if self.provider_options:
            if self.provider != Provider.PROLIFIC:
                raise ServiceError("Prolific options only apply to the prolific provider")
            from annotation.crowd.providers.prolific import validate_options

            validate_options(self.provider_options)
        if self.gold_per_hit < 0:
            raise ServiceError("gold queries per HIT cannot be negative")
        if self.provider_options:
            check_bonus_rule(bonus_rule_of(self.provider_options), self.provider, self.gold_per_hit)
        if not 0 < self.gold_pass_fraction <= 1:
            raise ServiceError("the gold pass fraction must be in (0, 1]")
        validate_thresholds({name: getattr(self, name) for name in (*THRESHOLD_FIELDS, "min_answers_judged")})
        if self.extra_budget is not None:
            check_amount(self.extra_budget, "extra budget", minimum="0")


def check_amount(value: object, field: str, *, minimum: str = "0", maximum: str | None = None) -> Decimal:
    """``value`` as whole-cent dollars (:func:`core.amounts.parse_amount`), or a ``ServiceError`` naming ``field``."""
    from core.amounts import AmountError, parse_amount

    try:
        return parse_amount(value, field, minimum=minimum, maximum=maximum)
    except AmountError as exc:
        raise ServiceError(str(exc)) from None


def bonus_max_per_participant() -> Decimal:
    """What one participant may earn in bonuses from one batch (``BONUS_MAX_PER_PARTICIPANT_USD``, default 100)."""
    return Decimal(str(django_settings.BONUS_MAX_PER_PARTICIPANT_USD))


def assignments_per_participant(provider: str, hits: int | None) -> int:
    """How many assignments one participant can take in a batch: one on Prolific (one submission per
    study), one per HIT elsewhere (a worker takes a HIT once; ``hits`` None: not known, counted as one)."""
    if provider == Provider.PROLIFIC:
        return 1
    return max(1, hits or 1)


def bonus_rule_of(options: dict | None):
    """The batch's bonus rule from its provider options (``annotation.crowd.bonus_rules.rule_of_options``:
    ``bonus_rule``, or the older flat ``bonus``), or None; a ``ServiceError`` naming the field."""
    from annotation.crowd.bonus_rules import RuleError, rule_of_options

    try:
        return rule_of_options(options)
    except RuleError as exc:
        raise ServiceError(str(exc)) from None


def check_bonus_rule(rule, provider: str, gold_per_hit: int, hits: int | None = None) -> None:
    """Refuse a rule under which one participant could earn more than ``BONUS_MAX_PER_PARTICIPANT_USD``
    from the batch (every assignment they can take, each with every check question right, plus a flat lump)."""
    from annotation.crowd.bonus_rules import RuleError, check_participant_most

    try:
        check_participant_most(
            rule, assignments_per_participant(provider, hits), gold_per_hit, bonus_max_per_participant()
        )
    except RuleError as exc:
        raise ServiceError(str(exc)) from None


#: Quality thresholds applied at every sync (``annotation.quality.services.thresholds``); None: off.
THRESHOLD_FIELDS = ("warn_gold_accuracy", "block_gold_accuracy", "warn_agreement", "block_agreement")


def validate_thresholds(values: dict[str, Any]) -> None:
    """Each threshold in [0, 1]; a block threshold not above its warn threshold; a positive minimum."""
    for name in THRESHOLD_FIELDS:
        value = values.get(name)
        if value is not None and not 0 <= value <= 1:
            raise ServiceError(f"{name.replace('_', ' ')} must be between 0 and 1 (got {value})")
    for what in ("gold_accuracy", "agreement"):
        warn, block = values.get(f"warn_{what}"), values.get(f"block_{what}")
        if warn is not None and block is not None and block > warn:
            raise ServiceError(
                f"the block threshold for {what.replace('_', ' ')} ({block}) is above the warn one ({warn})"
            )
    if values.get("min_answers_judged", 1) < 1:
        raise ServiceError("the minimum number of answers before judging a worker must be at least 1")


@dataclass(frozen=True)
class Offered:
    """Where the shells take one setting: the batch form's field (page and API) and the command's option.

    ``None`` means that shell does not offer it (the default applies), for the reason given.
    """

    form: str | None
    option: str | None
    why_not: str = ""


#: Every field of :class:`BatchSettings`, and where each shell offers it. Stored on ``Batch``
#: under the same name, except ``seed`` (used once, to shuffle the queries into HITs).
OFFERED: dict[str, Offered] = {
    "provider": Offered("provider", "--provider"),
    "assignments_per_query": Offered("assignments_per_query", "--assignments"),
    "queries_per_hit": Offered("queries_per_hit", "--queries-per-hit"),
    "reward": Offered("reward", "--reward"),
    "lifetime": Offered(None, "--lifetime", "the form keeps MTurk's default HIT lifetime (7 days)"),
    "assignment_duration": Offered(None, "--assignment-duration", "the form keeps the default 30 minutes"),
    "auto_approval_delay": Offered(None, "--auto-approve", "the form keeps the default 3 days"),
    "qualifications": Offered(
        "locales", "--qualification", "form: locales, min_approval_rate, min_approved_hits, masters"
    ),
    "gold_per_hit": Offered("gold_per_hit", "--gold-per-hit"),
    "gold_pass_fraction": Offered(
        None, None, "every gold question must be right (1.0) unless set through the services"
    ),
    "gold_feedback": Offered(None, "--no-gold-feedback", "the form keeps feedback on"),
    "seed": Offered(None, "--seed", "the form uses seed 0"),
    "provider_options": Offered("estimated_minutes", "--estimated-minutes", "form and command: one field per option"),
    "warn_gold_accuracy": Offered("warn_gold_accuracy", "--warn-gold"),
    "block_gold_accuracy": Offered("block_gold_accuracy", "--block-gold"),
    "warn_agreement": Offered("warn_agreement", "--warn-agreement"),
    "block_agreement": Offered("block_agreement", "--block-agreement"),
    "min_answers_judged": Offered("min_answers_judged", "--min-answers"),
    "extra_budget": Offered("extra_budget", "--budget"),
    "training_pass_fraction": Offered(None, "--training-pass", "the form has no training file yet"),
}
NOT_STORED = frozenset({"seed"})
