"""A Prolific batch's bonus rule, set (:func:`set_bonus_rule`) and paid exactly once (:func:`pay_bonuses`).

Prolific's bulk bonus pay call is documented as **not idempotent**, and Prolific pays asynchronously.
The protocol (docs/prolific.md, "Bonuses"): a lost answer, a retry, two clicks or a restart never pays twice:

1. one pay per batch at a time (the lease); every state change is a compare-and-set on the row;
2. rows left ``paying`` are settled from Prolific's state first (:func:`reconcile`), never paid again
   automatically: past ``PROLIFIC_BONUS_SETTLE_SECONDS`` a person decides (:func:`confirm_bonuses`);
3. a ``BonusPayment`` row per batch × participant is committed ``owed`` before any call;
4. ``owed`` rows are set up in bulks, which pays nothing (set up again after a lost answer);
5. ``paying`` is committed before the pay call; a refusal puts them back, a lost answer leaves them for 2.
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
    """The earliest (seconds after its pay call) a person may confirm an unseen bulk unpaid."""
    return settings.PROLIFIC_BONUS_SETTLE_SECONDS


@one_per_batch("Setting the bonus rule")
@transaction.atomic
def set_bonus_rule(batch: Batch, kind: str, amount: Decimal | str) -> BonusRule:
    """Set (or change) the batch's bonus rule (``amount``: ASCII dollars); refused once a bonus under it was
    recorded, or over ``BONUS_MAX_PER_PARTICIPANT_USD`` for one participant. A rule paid at every sync
    (the older ``bonus``) stays so only while unchanged."""
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
    #: Of ``unconfirmed``: rows past the settle time that Prolific still does not show (a person confirms them).
    needs_person: int = 0
    #: Rows still unconfirmed: paid, perhaps; Prolific does not show it yet.
    unconfirmed: int = 0
    recorded: int = 0


def _paid(rows) -> int:
    """Record ``rows`` (a queryset) paid now; how many."""
    return rows.update(state=State.PAID, paid_at=timezone.now())


def _shown_on_prolific(provider: CrowdProvider, row: BonusPayment) -> bool:
    return cents(row.amount) in provider.client.submission_bonuses(row.submission_id)


def reconcile(batch: Batch, provider: CrowdProvider, result: PayResult) -> None:
    """Settle bulks left ``paying`` from Prolific's state (step 2): a bulk is paid whole, so one participant
    showing their bonus, or one row already ``paid``, means every row of it is paid."""
    bulks = sorted(set(batch.bonus_payments.filter(state=State.PAYING).values_list("bulk_id", flat=True)))
    settle = dt.timedelta(seconds=settle_seconds())
    for bulk_id in bulks:
        rows = list(batch.bonus_payments.filter(bulk_id=bulk_id).order_by("pk"))
        open_rows = [r for r in rows if r.state != State.PAID]
        paying = [r for r in open_rows if r.state == State.PAYING]
        keys = [r.pk for r in open_rows]
        if len(open_rows) < len(rows) or any(_shown_on_prolific(provider, row) for row in open_rows):
            result.confirmed += _paid(BonusPayment.objects.filter(pk__in=keys).exclude(state=State.PAID))
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
            # Part of it is (being) paid by another pay: a bulk is paid whole, so never from here (step 2).
            continue
        rows = list(batch.bonus_payments.filter(state=State.SET_UP, bulk_id=bulk_id))
        keys = [r.pk for r in rows]
        claimed = BonusPayment.objects.filter(pk__in=keys, state=State.SET_UP).update(
            state=State.PAYING, pay_attempted=timezone.now()
        )
        if claimed != len(keys):
            # Another pay claimed part of this bulk: the rows claimed here stay "paying" (step 2).
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
        updated = _paid(BonusPayment.objects.filter(pk__in=keys, state=State.PAYING))
        if updated != len(keys):
            # Changed during the call (not expected under the lease): Prolific paid it whole, say so loudly.
            logger.warning(
                "batch %s: bulk bonus %s paid, but %d of its %d rows were no longer 'paying' at the answer",
                batch.name,
                bulk_id,
                len(keys) - updated,
                len(keys),
            )
            _paid(BonusPayment.objects.filter(pk__in=keys).exclude(state=State.PAID))
        result.paid_now += len(keys)
        result.amount_paid_now += sum((r.amount for r in rows), Decimal("0.00"))


def check_expected_total(batch: Batch, expected_total) -> None:
    """``StateError`` when paying now would send another total than the previewed ``expected_total``."""
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
    """Pay the rule to every approved participant not paid yet, exactly once; ``expected_total``: the
    previewed total (bonuses and fee), compared after step 2 (:func:`check_expected_total`)."""
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
    """After checking Prolific's site: mark ``paying`` rows paid, or not paid (refused within the settle time;
    Prolific read once more first)."""
    check_pays_bonus_rules(batch)
    unconfirmed = batch.bonus_payments.filter(state=State.PAYING)
    result = ConfirmResult()
    if paid:
        result.paid = _paid(unconfirmed)
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
                result.paid += _paid(BonusPayment.objects.filter(pk__in=keys, state=State.PAYING))
            else:
                result.unpaid += BonusPayment.objects.filter(pk__in=keys, state=State.PAYING).update(
                    state=State.SET_UP, pay_attempted=None
                )
    return result


# --- the background job (its kind and task name never change) ---
#: The kind of a bonus pay's Job (one queued or running per batch at a time).
PAY_BONUSES_JOB_KIND = "annotation.pay_bonuses"


# A refusal fails the Job with its message; a redelivery after a crash is safe (the protocol).
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
    """Pay the batch's bonuses in the background (minutes of remote calls); refused at once when it has no
    study, a pay of it is under way, or the total already differs from ``expected_total``."""
    check_pays_bonus_rules(batch)
    if not batch.hit_type_id:
        raise StateError(f"batch {batch.name!r} has no Prolific study yet; publish it first")
    check_expected_total(batch, expected_total)
    if expected_total is not None:
        expected_total = str(expected_total)
    busy = f"bonuses of batch {batch.name!r} are being paid already"  # one pay job per batch at a time
    return start_once(pay_bonuses_job, batch, f"Pay bonuses of {batch.name}", batch.pk, expected_total, busy=busy)
