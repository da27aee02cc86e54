"""One bonus system (issue 41): the older per-sync ``--bonus`` becomes a bonus rule, its ``Bonus`` rows
``BonusPayment`` rows, and the ``Bonus`` table goes.

Every stored value stays readable and every bonus is counted once:

- a batch's option ``bonus`` (USD to every approved participant, paid at every sync) becomes the
  rule ``{"kind": "flat", "amount": ..., "at_sync": true}`` (``annotation.crowd.bonus_rules``), which
  sync goes on paying; ``0`` or empty is no rule;
- each ``Bonus`` row (one per approved assignment) becomes a ``BonusPayment`` with its amount, bulk
  id, pay time and state: ``paid`` (paid at the pay time, or at its creation when none was kept),
  ``paying`` (its pay call was sent and never confirmed: it is never paid again automatically, as
  before), ``set_up`` (a bulk id, no pay call yet) or ``owed``. A participant's first row is the
  rule's row for them (``assignment`` empty: the rule never owes them again); any further row of
  theirs in the batch keeps its assignment (unique per assignment), so nothing is merged or lost.

On a new database the data step has no rows to rewrite (``core.db.new_database.REVIEWED``).
"""

from decimal import Decimal, InvalidOperation

from django.db import migrations, models
from django.db.models import Q


def forward(apps, schema_editor):
    # PostgreSQL: the rows written here would leave deferred foreign-key checks pending, and the
    # index of the new ``assignment`` column, created at the migration's end, cannot be built on a
    # table with pending trigger events; checked at once instead, none is left pending.
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    Batch = apps.get_model("annotation", "Batch")
    Bonus = apps.get_model("annotation", "Bonus")
    BonusPayment = apps.get_model("annotation", "BonusPayment")
    for batch in Batch.objects.exclude(provider_options={}).iterator():
        options = dict(batch.provider_options or {})
        if "bonus" not in options:
            continue
        flat = str(options.pop("bonus") or "0").strip()
        try:
            amount = Decimal(flat)
        except InvalidOperation:
            amount = Decimal("0")
        if amount > 0 and not options.get("bonus_rule"):
            options["bonus_rule"] = {"kind": "flat", "amount": flat, "at_sync": True}
        elif amount > 0:
            options["bonus"] = flat  # both were stored (never accepted): kept as it was, refused when read
        batch.provider_options = options
        batch.save(update_fields=["provider_options"])
    rows = Bonus.objects.select_related("assignment__hit", "assignment__worker__identity").order_by("pk")
    for bonus in rows.iterator():
        assignment = bonus.assignment
        batch_id = assignment.hit.batch_id
        participant = assignment.worker.identity.external_id
        if bonus.paid:
            state = "paid"
        elif bonus.pay_attempted is not None:
            state = "paying"
        elif bonus.bulk_id:
            state = "set_up"
        else:
            state = "owed"
        first = not BonusPayment.objects.filter(
            batch_id=batch_id, participant_id=participant, assignment__isnull=True
        ).exists()
        payment = BonusPayment.objects.create(
            batch_id=batch_id,
            assignment=None if first else assignment,
            participant_id=participant,
            submission_id=assignment.provider_assignment_id,
            amount=bonus.amount,
            reason="approved work (bonus paid at every sync)",
            state=state,
            bulk_id=bonus.bulk_id,
            pay_attempted=bonus.pay_attempted,
            paid_at=(bonus.pay_attempted or bonus.created) if bonus.paid else None,
        )
        BonusPayment.objects.filter(pk=payment.pk).update(created=bonus.created)  # its own date, not today's


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0022_prolific_webhooks_confirmed"),
    ]

    operations = [
        migrations.AddField(
            model_name="bonuspayment",
            name="assignment",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=models.deletion.PROTECT,
                related_name="bonus_payments",
                to="annotation.assignment",
            ),
        ),
        migrations.RemoveConstraint(model_name="bonuspayment", name="one_bonus_per_batch_participant"),
        migrations.AddConstraint(
            model_name="bonuspayment",
            constraint=models.UniqueConstraint(
                condition=Q(assignment__isnull=True),
                fields=("batch", "participant_id"),
                name="one_bonus_per_batch_participant",
            ),
        ),
        migrations.AddConstraint(
            model_name="bonuspayment",
            constraint=models.UniqueConstraint(
                condition=Q(assignment__isnull=False), fields=("assignment",), name="one_bonus_per_assignment"
            ),
        ),
        migrations.RunPython(forward, migrations.RunPython.noop),
        migrations.DeleteModel(name="Bonus"),
    ]
