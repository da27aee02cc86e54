"""A Prolific batch's bonus rule, previewed with its total and paid exactly once.

The rule (:mod:`annotation.crowd.bonus_rules`: a flat bonus per approved participant, or a
bonus per check question right in approved work) is set when the batch is created or later
on the batch page (:func:`set_bonus_rule`, refused once a bonus has been recorded);
:func:`platforms.prolific.bonuses.selectors.preview_bonuses` (a read) shows what it owes each participant and what paying it costs with
Prolific's fee (:func:`annotation.crowd.costs.bonus_cost`), before anything is paid; and
:func:`pay_bonuses` pays it through Prolific's bulk bonus calls: ``POST
/submissions/bonus-payments/`` sets a bulk bonus up (it pays nothing) and ``POST
/bulk-bonus-payments/{id}/pay/`` pays it -- a call Prolific documents as **not idempotent**
("sending multiple requests with the same bulk bonus payment ID will result in participants
being paid multiple times"). Participants approved later are paid by a later pay.

Idempotence protocol (a lost answer, a retry, two clicks or a worker restart never pays twice):

1. one pay per batch at a time: the batch's lease (:mod:`.locking`, shared with publish and
   sync); a second click is told the batch is busy (409), and every state change below is
   also a compare-and-set on the row's state;
2. first, rows left ``paying`` by an earlier call whose answer was lost (or by a worker that
   died in the call) are **reconciled by reading Prolific**: ``GET /submissions/{id}/`` shows
   the bonuses paid on each participant's submission (``bonus_payments``, in cents). A bulk
   bonus is paid as a whole, so one of its participants showing their bonus (or one of its
   rows already ``paid``) means the bulk was paid: every row of it becomes ``paid``. Prolific pays asynchronously ("in the
   following minutes", later at times, and ``bonus_payments`` may be shown in another unit), so
   a bulk nobody's submission shows stays ``paying`` (unconfirmed) and is **never paid again
   automatically**: once ``PROLIFIC_BONUS_SETTLE_SECONDS`` (default 3600) have passed since its
   pay call it is reported as needing a person (``needs_person``: check Prolific's site, then
   :func:`confirm_bonuses`);
3. the intent: a ``BonusPayment`` row per batch × participant (unique) with its amount is
   committed before any call (``owed``);
4. ``owed`` rows are set up in bulk bonuses (up to 200 participants each); each id is saved with them (``set_up``) when
   Prolific answers. Setting up pays nothing: after a lost answer the rows stay ``owed`` and
   the next pay sets them up again (the orphan bulk is never paid);
5. each bulk all of whose rows are ``set_up`` (a bulk part of which another pay claimed is
   left to step 2): ``paying`` and the time are committed *before* the pay call;
   its answer makes them ``paid``. A refusal Prolific gave before doing anything (a 4xx, a
   429 past the retries) puts them back to ``set_up``; a lost answer or a 5xx (it may have
   paid) leaves them ``paying``, for step 2 of a later pay to settle from Prolific's state.

A person settles unconfirmed rows after checking Prolific's site (:func:`confirm_bonuses`,
under the batch's lease): paid, or not paid -- refused before ``PROLIFIC_BONUS_SETTLE_SECONDS``
have passed since the pay call, and Prolific is read once more first (a bulk it shows is
marked paid instead). Confirming "not paid" is the only way a bulk is ever paid a second time.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import asdict, dataclass
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotation.crowd.bonus_rules import BULK_SIZE, BonusRule, RuleError
from annotation.crowd.providers import CrowdProvider, get_provider
from annotation.crowd.services.background import _batch_url
from annotation.crowd.services.batch_settings import check_amount, check_bonus_rule
from annotation.crowd.services.locking import one_per_batch
from annotation.models import Batch, BonusPayment, Provider
from core.errors import ServiceError, StateError
from core.jobs import background_job
from core.models import Job
from core.services.once import start_once
from platforms.prolific.bonuses.selectors import (  # the reads: the preview, the rule, what is owed
    bonus_rule,
    check_pays_bonus_rules,
    newly_owed,
    preview_bonuses,
)
from platforms.prolific.client import ProlificError, ProlificUnknownOutcome, cents

logger = logging.getLogger(__name__)
State = BonusPayment.State


def settle_seconds() -> int:
    """The earliest (seconds after its pay call) a person may confirm an unseen bulk unpaid (Prolific pays asynchronously)."""
    return settings.PROLIFIC_BONUS_SETTLE_SECONDS


@one_per_batch("Setting the bonus rule")
@transaction.atomic
def set_bonus_rule(batch: Batch, kind: str, amount: Decimal | str) -> BonusRule:
    """Set (or change) the batch's bonus rule; refused once a bonus under it has been recorded, and
    when one participant could earn more than ``BONUS_MAX_PER_PARTICIPANT_USD`` under it.

    ``amount`` is plain ASCII dollars (:func:`core.amounts.parse_amount`; refusals name the field).
    A rule set here is paid when a person pays it; a rule paid at every sync (the older ``bonus``)
    keeps being so only while it is not changed."""
    check_pays_bonus_rules(batch)
    batch = Batch.objects.select_for_update().get(pk=batch.pk)
    try:
        rule = BonusRule(kind, amount)
    except RuleError as exc:
        raise ServiceError(str(exc)) from None
    check_bonus_rule(rule, batch.provider, batch.gold_per_hit, batch.hits.count())
    current = bonus_rule(batch)
    if current is not None and (current.kind, current.amount) == (rule.kind, rule.amount):
        return current  # the same rule again: nothing changes (one paid at every sync stays so)
    if batch.bonus_payments.filter(assignment=None).exists():
        raise StateError(f"batch {batch.name!r} has bonuses recorded under its rule; the rule can no longer change")
    options = {key: value for key, value in batch.provider_options.items() if key != "bonus"}
    batch.provider_options = {**options, "bonus_rule": rule.as_options()}
    batch.save(update_fields=["provider_options"])
    return rule


@dataclass
class PayResult:
    paid_now: int = 0
    amount_paid_now: Decimal = Decimal("0.00")
    #: Rows an earlier lost answer left unsettled, now found paid on Prolific.
    confirmed: int = 0
    #: Of ``unconfirmed``: rows past the settle time that Prolific still does not show. Never paid
    #: again automatically: a person checks Prolific, then confirms them paid or unpaid.
    needs_person: int = 0
    #: Rows still unconfirmed: paid, perhaps; Prolific does not show it yet.
    unconfirmed: int = 0
    recorded: int = 0


def _shown_on_prolific(provider: CrowdProvider, row: BonusPayment) -> bool:
    return cents(row.amount) in provider.client.submission_bonuses(row.submission_id)


def reconcile(batch: Batch, provider: CrowdProvider, result: PayResult) -> None:
    """Settle bulks with rows left ``paying`` from Prolific's state (step 2 of the protocol).

    A bulk is paid whole: one of its participants showing their bonus, or one of its rows
    already ``paid``, means every row of it is paid.
    """
    bulks = sorted(set(batch.bonus_payments.filter(state=State.PAYING).values_list("bulk_id", flat=True)))
    settle = dt.timedelta(seconds=settle_seconds())
    for bulk_id in bulks:
        rows = list(batch.bonus_payments.filter(bulk_id=bulk_id).order_by("pk"))
        open_rows = [r for r in rows if r.state != State.PAID]
        paying = [r for r in open_rows if r.state == State.PAYING]
        keys = [r.pk for r in open_rows]
        if len(open_rows) < len(rows) or any(_shown_on_prolific(provider, row) for row in open_rows):
            result.confirmed += (
                BonusPayment.objects.filter(pk__in=keys)
                .exclude(state=State.PAID)
                .update(state=State.PAID, paid_at=timezone.now())
            )
        else:
            result.unconfirmed += len(open_rows)
            if all(r.pay_attempted is None or timezone.now() - r.pay_attempted >= settle for r in paying):
                logger.warning(
                    "batch %s: bulk bonus %s shows on no submission %s after its pay call: "
                    "needs a person (check Prolific, then --confirm-paid or --confirm-unpaid)",
                    batch.name,
                    bulk_id,
                    settle,
                )
                result.needs_person += len(open_rows)


def _record(batch: Batch, rule: BonusRule | None) -> int:
    new = newly_owed(batch, rule)
    BonusPayment.objects.bulk_create(
        [
            BonusPayment(
                batch=batch,
                participant_id=o.participant_id,
                submission_id=o.submission_id,
                amount=o.amount,
                reason=o.reason[:200],
            )
            for o in new
        ],
        ignore_conflicts=True,
    )
    return len(new)


def _set_up(batch: Batch, provider: CrowdProvider) -> None:
    rows = list(batch.bonus_payments.filter(state=State.OWED).order_by("pk"))
    for start in range(0, len(rows), BULK_SIZE):
        chunk = rows[start : start + BULK_SIZE]
        bulk_id = provider.client.set_up_bonuses(batch.hit_type_id, {r.participant_id: r.amount for r in chunk})
        BonusPayment.objects.filter(pk__in=[r.pk for r in chunk], state=State.OWED).update(
            state=State.SET_UP, bulk_id=bulk_id
        )


def _pay_set_up(batch: Batch, provider: CrowdProvider, result: PayResult) -> None:
    bulks = sorted(set(batch.bonus_payments.filter(state=State.SET_UP).values_list("bulk_id", flat=True)))
    for bulk_id in bulks:
        if batch.bonus_payments.filter(bulk_id=bulk_id).exclude(state=State.SET_UP).exists():
            # Part of this bulk is being paid, or was paid, by another pay: a bulk is paid whole,
            # so never again from here (its rows are settled from Prolific's state: step 2, counted there).
            continue
        rows = list(batch.bonus_payments.filter(state=State.SET_UP, bulk_id=bulk_id))
        keys = [r.pk for r in rows]
        claimed = BonusPayment.objects.filter(pk__in=keys, state=State.SET_UP).update(
            state=State.PAYING, pay_attempted=timezone.now()
        )
        if claimed != len(keys):
            # Another pay claimed part of this bulk and pays it (a bulk is paid whole): the rows
            # claimed here stay "paying", settled from Prolific's state by a later pay.
            result.unconfirmed += claimed
            continue
        try:
            provider.client.pay_bonuses(bulk_id)
        except ProlificUnknownOutcome:
            result.unconfirmed += len(keys)  # it may have paid: settled from Prolific's state later
            continue
        except ProlificError:
            BonusPayment.objects.filter(pk__in=keys, state=State.PAYING).update(state=State.SET_UP, pay_attempted=None)
            raise  # refused before anything was done: the rows can be paid later
        updated = BonusPayment.objects.filter(pk__in=keys, state=State.PAYING).update(
            state=State.PAID, paid_at=timezone.now()
        )
        if updated != len(keys):
            # Someone changed these rows during the call (they hold the lease, so this is not
            # expected): Prolific paid the bulk whole, say so loudly.
            logger.warning(
                "batch %s: bulk bonus %s paid, but %d of its %d rows were no longer 'paying' at the answer",
                batch.name,
                bulk_id,
                len(keys) - updated,
                len(keys),
            )
            BonusPayment.objects.filter(pk__in=keys).exclude(state=State.PAID).update(
                state=State.PAID, paid_at=timezone.now()
            )
        result.paid_now += len(keys)
        result.amount_paid_now += sum((r.amount for r in rows), Decimal("0.00"))


def check_expected_total(batch: Batch, expected_total) -> None:
    """Refuse (``StateError``) when paying now would send another total than the ``expected_total``
    the researcher previewed (None: no check); ``ServiceError`` when it is not an amount."""
    if expected_total is None:
        return
    expected = check_amount(expected_total, "expected_total", maximum="99999999.99")
    now = preview_bonuses(batch).to_pay.total
    if expected != now:
        raise StateError(
            f"the total to pay is now ${now}, not the ${expected_total} previewed: check the preview again"
        )


@one_per_batch("Paying bonuses")
def pay_bonuses(
    batch: Batch, provider: CrowdProvider | None = None, *, expected_total: Decimal | str | None = None
) -> PayResult:
    """Pay the batch's bonus rule to every approved participant not paid yet, exactly once (see the protocol).

    ``expected_total``: the total (bonuses and fee) the researcher previewed; refused (``StateError``)
    when paying now would send another total (work approved since the preview, say).
    """
    check_pays_bonus_rules(batch)
    if not batch.hit_type_id:
        raise StateError(f"batch {batch.name!r} has no Prolific study yet; publish it first")
    rule = bonus_rule(batch)
    provider = provider or get_provider(Provider.PROLIFIC)
    result = PayResult()
    reconcile(batch, provider, result)  # first: what is paid now depends on it
    check_expected_total(batch, expected_total)
    if rule is None and not batch.bonus_payments.exclude(state=State.PAID).exists():
        raise ServiceError(f"batch {batch.name!r} has no bonus rule; set one first")
    result.recorded = _record(batch, rule)
    _set_up(batch, provider)
    _pay_set_up(batch, provider, result)
    return result


@dataclass
class ConfirmResult:
    #: Rows recorded paid (a person said so, or Prolific now shows the bulk).
    paid: int = 0
    #: Rows the next pay pays again (their bulk: a person checked Prolific and it shows nothing).
    unpaid: int = 0


@one_per_batch("Confirming bonuses")
def confirm_bonuses(batch: Batch, *, paid: bool, provider: CrowdProvider | None = None) -> ConfirmResult:
    """After checking on Prolific's site: mark unconfirmed (``paying``) rows paid, or not paid (the next pay pays them).

    Held under the batch's lease, so it never runs while a pay is in its call (told the batch is
    busy). "Not paid" is refused (``StateError``, nothing changed) while any unconfirmed bulk's pay
    call is more recent than ``PROLIFIC_BONUS_SETTLE_SECONDS`` (Prolific pays asynchronously), and
    each bulk is read on Prolific once more first: one it shows now is marked paid instead.
    """
    check_pays_bonus_rules(batch)
    unconfirmed = batch.bonus_payments.filter(state=State.PAYING)
    result = ConfirmResult()
    if paid:
        result.paid = unconfirmed.update(state=State.PAID, paid_at=timezone.now())
        return result
    rows = list(unconfirmed.order_by("pk"))
    settle = dt.timedelta(seconds=settle_seconds())
    recent = [r for r in rows if r.pay_attempted is not None and timezone.now() - r.pay_attempted < settle]
    if recent:
        earliest = max(r.pay_attempted for r in recent) + settle
        raise StateError(
            f"batch {batch.name!r}: {len(recent)} bonus(es) were sent to Prolific less than {settle_seconds()} s ago "
            f"(PROLIFIC_BONUS_SETTLE_SECONDS) and Prolific pays asynchronously: they cannot be confirmed unpaid "
            f"before {earliest:%Y-%m-%d %H:%M:%S} UTC; check Prolific's site again then"
        )
    provider = provider or get_provider(Provider.PROLIFIC)
    for bulk_id in sorted({r.bulk_id for r in rows}):
        bulk = [r for r in rows if r.bulk_id == bulk_id]
        already = batch.bonus_payments.filter(bulk_id=bulk_id, state=State.PAID).exists()
        keys = [r.pk for r in bulk]
        with transaction.atomic():
            if already or any(_shown_on_prolific(provider, r) for r in bulk):
                logger.warning(
                    "batch %s: bulk bonus %s confirmed unpaid, but Prolific shows it paid", batch.name, bulk_id
                )
                result.paid += BonusPayment.objects.filter(pk__in=keys, state=State.PAYING).update(
                    state=State.PAID, paid_at=timezone.now()
                )
            else:
                result.unpaid += BonusPayment.objects.filter(pk__in=keys, state=State.PAYING).update(
                    state=State.SET_UP, pay_attempted=None
                )
    return result


# --- the background job (declared here, beside its work; its kind and task name never change) ---

#: The kind of a bonus pay's Job (one queued or running per batch at a time).
PAY_BONUSES_JOB_KIND = "annotation.pay_bonuses"


# A refusal (nothing to pay, the total moved, Prolific refused before paying, the batch busy)
# fails the Job with its message; a redelivery after a crash is safe (the pay's protocol).
@background_job(PAY_BONUSES_JOB_KIND, task="annotation.tasks.pay_bonuses_task", failures=(ServiceError,))
def pay_bonuses_job(job: Job, batch_id: int, expected_total: str | None = None) -> dict:
    batch = Batch.objects.get(pk=batch_id)
    result = pay_bonuses(batch, expected_total=expected_total)
    job.result = {
        "batch": batch.name,
        **asdict(result),
        "amount_paid_now": str(result.amount_paid_now),
        "url": f"{_batch_url(batch)}#bonuses",
    }
    job.message = f"Paid {result.paid_now} bonus(es) now (${result.amount_paid_now})"
    if result.confirmed:
        job.message += f"; {result.confirmed} earlier payment(s) confirmed on Prolific"
    if result.unconfirmed:
        job.message += f"; {result.unconfirmed} unconfirmed: never paid again before Prolific shows them"
    if result.needs_person:
        job.message += (
            f"; {result.needs_person} still not shown on Prolific after the settle time: needs a person: "
            "check Prolific, then --confirm-paid or --confirm-unpaid"
        )
    return job.result


def start_pay_bonuses(batch: Batch, *, expected_total: str | None = None) -> Job:
    """Pay the batch's bonuses in the background (its remote calls may take minutes: never in a request).

    Refused at once (a message on the page, 400/409 in the API) when the batch is not a published
    Prolific batch, a pay of it is queued or running, or the total to pay already differs from the
    previewed ``expected_total`` (the job compares it again after settling unconfirmed payments).
    """
    check_pays_bonus_rules(batch)
    if not batch.hit_type_id:
        raise StateError(f"batch {batch.name!r} has no Prolific study yet; publish it first")
    check_expected_total(batch, expected_total)
    if expected_total is not None:
        expected_total = str(expected_total)
    busy = f"bonuses of batch {batch.name!r} are being paid already"  # one pay job per batch at a time
    return start_once(pay_bonuses_job, batch, f"Pay bonuses of {batch.name}", batch.pk, expected_total, busy=busy)
