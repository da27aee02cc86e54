"""Prolific participant groups across waves: who a batch's study lets in or keeps out, made once.

A batch may exclude (``exclude_batches``) or admit only (``allow_batches``) other batches' participants;
those who failed a gold threshold join the workspace's *failed gold checks* group, which later studies
block unless ``admit_gold_failures`` (docs/prolific.md, "Participant groups across waves").

Idempotence (no request token): a group's row (its unique name finds it again) and then
``create_attempted`` are committed before the create, which after a lost answer is looked up by name
(one process at a time: a lease); a member's row is committed before the (repeatable) add;
``delete_attempted`` before a delete (a 404: deleted already); an add answered 404 makes the group again.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from django.db import IntegrityError, transaction
from django.utils import timezone

from annotation.crowd.providers import CrowdProvider, get_provider
from annotation.crowd.services.hooks import cancelled, preparing
from annotation.models import Assignment, Batch, Provider
from core.errors import ServiceError
from core.services.leases import exclusive
from platforms.prolific.client import ProlificError, create_or_find
from platforms.prolific.connection.selectors import prolific_settings
from platforms.prolific.models import GroupMember, ParticipantGroup
from platforms.prolific.provider import GOLD_FAILED_GROUP

logger = logging.getLogger(__name__)

#: A batch's own groups are named after it (names are unique in the workspace and find a group again).
EXCLUDE_NAME = "took part before {batch}"
ALLOW_NAME = "may take part in {batch}"
#: The batch option naming other batches, the role of the group it makes, and that group's name.
WAVES = (
    ("exclude_batches", ParticipantGroup.Role.EXCLUDE, EXCLUDE_NAME),
    ("allow_batches", ParticipantGroup.Role.ALLOW, ALLOW_NAME),
)


def _workspace() -> str:
    workspace = prolific_settings().workspace_id
    if not workspace:
        raise ServiceError("PROLIFIC_WORKSPACE_ID is not set: participant groups belong to a Prolific workspace")
    return workspace


def _provider(provider: CrowdProvider | None) -> CrowdProvider:
    return provider or get_provider(Provider.PROLIFIC)


def ensure_group(provider: CrowdProvider, name: str, role: str, batch: Batch | None = None) -> ParticipantGroup:
    """The group called ``name`` with its Prolific id: recorded first, created once (see the protocol)."""
    try:
        with transaction.atomic():
            row, _ = ParticipantGroup.objects.get_or_create(name=name, defaults={"role": role, "batch": batch})
    except IntegrityError:  # made at the same moment elsewhere
        row = ParticipantGroup.objects.get(name=name)
    if row.group_id and not row.deleted:
        return row
    with exclusive(f"prolific-group:{name}", f"making participant group {name!r}"):
        row.refresh_from_db()
        if row.group_id and not row.deleted:
            return row
        workspace = _workspace()
        client = provider.client
        found = client.find_group(workspace, name) if row.create_attempted is not None else None
        if found is None:
            ParticipantGroup.objects.filter(pk=row.pk).update(create_attempted=timezone.now())
            found = create_or_find(
                lambda: client.create_group(workspace, name), lambda: client.find_group(workspace, name)
            )
        ParticipantGroup.objects.filter(pk=row.pk).update(group_id=found["id"], deleted=False, delete_attempted=None)
        row.refresh_from_db()
    return row


def fill_group(
    provider: CrowdProvider, group: ParticipantGroup, participant_ids: Iterable[str], reason: str = ""
) -> int:
    """Add ``participant_ids`` to ``group``, each recorded first, with earlier unanswered ones; how many sent."""
    ids = sorted(set(participant_ids))
    GroupMember.objects.bulk_create(
        [GroupMember(group=group, participant_id=pid, reason=reason[:200]) for pid in ids], ignore_conflicts=True
    )
    pending = sorted(group.members.filter(added=False).values_list("participant_id", flat=True))
    if pending:
        provider.client.add_to_group(group.group_id, pending)
        group.members.filter(participant_id__in=pending).update(added=True)
    return len(pending)


def _participants(**where) -> list[str]:
    """Prolific ids of everyone whose work (``where``) Prolific attributed to them (void work excluded)."""
    return sorted(
        set(
            Assignment.objects.filter(worker__provider=Provider.PROLIFIC, **where)
            .exclude(status=Assignment.Status.VOID)
            .values_list("worker__identity__external_id", flat=True)
        )
    )


@preparing.register(provider="prolific")  # before the study is made (publish_batch)
def prepare_groups(batch: Batch, provider: CrowdProvider | None = None) -> list[ParticipantGroup]:
    """Make and fill the batch's allow- and block-list groups before its study is created (repeatable)."""
    if batch.provider != Provider.PROLIFIC:
        return []
    provider = _provider(provider)
    options = batch.provider_options or {}
    made = []
    for key, role, name in WAVES:
        names = options.get(key) or []
        if not names:
            continue
        group = ensure_group(provider, name.format(batch=batch.name), role, batch)
        fill_group(provider, group, _participants(hit__batch__name__in=names), reason=f"{key}: {', '.join(names)}")
        made.append(group)
    return made


def refill_groups(batch: Batch, provider: CrowdProvider | None = None) -> int:
    """Add to the batch's groups the participants its named batches have now, as those may still run; how
    many were sent (no call when nobody is new)."""
    if not Batch.objects.filter(pk=batch.pk, status=Batch.Status.PUBLISHED).exists():
        return 0  # its study is closed: its groups are, or are about to be, deleted
    options = batch.provider_options or {}
    sent = 0
    for key, role, _ in WAVES:
        names = options.get(key) or []
        group = ParticipantGroup.objects.filter(batch=batch, role=role, deleted=False).exclude(group_id="").first()
        if not names or group is None:
            continue
        sent += fill_group(
            _provider(provider), group, _participants(hit__batch__name__in=names), reason=f"{key}: {', '.join(names)}"
        )
    return sent


def record_gold_failures(batch: Batch, provider: CrowdProvider | None = None) -> int:
    """Add the batch's participants who failed its gold threshold to the failed-gold group; how many were new
    (without ``PROLIFIC_WORKSPACE_ID``: none, with a warning)."""
    failed = _participants(hit__batch=batch, gold_passed=False)
    group = ParticipantGroup.objects.filter(name=GOLD_FAILED_GROUP).first()
    known = set(group.members.filter(added=True).values_list("participant_id", flat=True)) if group else set()
    if not set(failed) - known:
        return 0  # nothing new: no call at all
    if not prolific_settings().workspace_id:  # no groups without a workspace: the sync goes on without
        logger.warning(
            "batch %s: %d participant(s) failed its gold threshold; PROLIFIC_WORKSPACE_ID is not set, so they"
            " join no block-list group",
            batch.name,
            len(set(failed) - known),
        )
        return 0
    provider = _provider(provider)
    group = ensure_group(provider, GOLD_FAILED_GROUP, ParticipantGroup.Role.GOLD_FAILED)
    try:
        return fill_group(provider, group, failed, reason=f"failed gold in {batch.name}")
    except ProlificError as exc:
        if exc.status != 404:
            raise
    logger.warning("participant group %r (%s) is gone on Prolific: making it again", group.name, group.group_id)
    forget_group(group)
    group = ensure_group(provider, GOLD_FAILED_GROUP, ParticipantGroup.Role.GOLD_FAILED)
    return fill_group(provider, group, failed, reason=f"failed gold in {batch.name}")


def forget_group(group: ParticipantGroup) -> None:
    """A group Prolific answers 404 for: no id (``ensure_group`` makes it again), its members unsent."""
    with transaction.atomic():
        ParticipantGroup.objects.filter(pk=group.pk).update(group_id="", deleted=True, create_attempted=None)
        group.members.update(added=False)


@cancelled.register(provider="prolific")  # the stopped study's own groups go (cancel_batch)
def clean_up_groups(batch: Batch, provider: CrowdProvider | None = None) -> int:
    """Delete the batch's own groups on Prolific once its study is closed (repeatable); how many now."""
    if batch.status not in (Batch.Status.COMPLETED, Batch.Status.CANCELLED):
        raise ServiceError(f"batch {batch.name!r} is {batch.status}: its study still uses its participant groups")
    rows = list(ParticipantGroup.objects.filter(batch=batch, deleted=False))
    if not rows:
        return 0
    provider = _provider(provider)
    deleted = 0
    for row in rows:
        group_id = row.group_id
        if not group_id and row.create_attempted is not None:
            found = provider.client.find_group(_workspace(), row.name)  # a create whose answer was lost
            group_id = found["id"] if found else ""
        if group_id:
            ParticipantGroup.objects.filter(pk=row.pk).update(delete_attempted=timezone.now())
            deleted += provider.client.delete_group(group_id)
        ParticipantGroup.objects.filter(pk=row.pk).update(deleted=True)
    return deleted
