from annotation.management.commands._common import command_errors, get_batch
from core.management.cli import ProjectCommand
from platforms.prolific.bonuses import services as prolific_bonuses
from platforms.prolific.bonuses.selectors import BonusPreview, preview_bonuses

NEEDS_PERSON = (
    "{} bonus(es) still not shown on Prolific after PROLIFIC_BONUS_SETTLE_SECONDS: needs a person: "
    "check Prolific, then --confirm-paid or --confirm-unpaid (nothing is ever paid twice automatically)"
)


def describe(preview: BonusPreview) -> list[str]:
    """The preview as lines: the rule, one line per participant, the total to pay now with Prolific's fee."""
    lines = [f"Rule: {preview.rule.describe() if preview.rule else 'none (set one with --rule)'}"]
    for row in preview.rows:
        lines.append(f"  {row['participant']}  ${row['amount']}  {row['state']:<8} {row['reason']}")
    cost = preview.to_pay
    lines.append(
        f"To pay now: {cost.participants} participant(s), ${cost.bonuses} + ${cost.fees} Prolific's fee "
        f"({cost.fee_rate}) = ${cost.total}"
    )
    if preview.paid and preview.paid.participants:
        lines.append(f"Paid already: {preview.paid.participants} participant(s), ${preview.paid.total} with fees")
    if preview.unconfirmed:
        lines.append(
            f"{preview.unconfirmed} bonus(es) whose pay call lost its answer: --pay first reads Prolific's state"
        )
    if preview.needs_person:
        lines.append(NEEDS_PERSON.format(preview.needs_person))
    return lines


class Command(ProjectCommand):
    help = (
        "A Prolific batch's bonus rule, previewed and paid exactly once. --rule flat:0.50 (each approved "
        "participant) or per_gold:0.10 (each check question right in approved work) sets the rule; "
        "--preview (the default) shows what each participant gets and the total with Prolific's fee "
        "(PROLIFIC_FEE_RATE); --pay pays what is owed through Prolific's bulk bonus calls, once: a lost "
        "answer, a retry or a second --pay never pays twice (a pay whose answer was lost is settled from "
        "Prolific's state first); a payment Prolific still does not show after PROLIFIC_BONUS_SETTLE_SECONDS "
        "is never paid again automatically: --confirm-paid / --confirm-unpaid settle it after a person checks "
        "Prolific's site (--confirm-unpaid only after the settle time, and Prolific is read once more first)."
    )

    def add_arguments(self, parser):
        parser.add_argument("batch", help="the Prolific batch's name")
        parser.add_argument("--rule", metavar="KIND:USD", help="set the rule first: flat:0.50 or per_gold:0.10")
        what = parser.add_mutually_exclusive_group()
        what.add_argument("--preview", action="store_true", help="show the bonuses and their total (the default)")
        what.add_argument("--pay", action="store_true", help="pay the bonuses owed, exactly once")
        what.add_argument("--confirm-paid", action="store_true", help="Prolific shows the unconfirmed ones paid")
        what.add_argument(
            "--confirm-unpaid",
            action="store_true",
            help="Prolific shows them unpaid (after the settle time): the next --pay pays them",
        )

    def handle(self, **o):
        batch = get_batch(o["batch"])
        with command_errors():
            if o["rule"]:
                kind, _, amount = o["rule"].partition(":")
                rule = prolific_bonuses.set_bonus_rule(batch, kind.strip(), amount.strip())
                batch.refresh_from_db()
                self.stdout.write(f"Bonus rule of {batch.name}: {rule.describe()}")
            if o["pay"]:
                result = prolific_bonuses.pay_bonuses(batch)
                self.stdout.write(
                    self.style.SUCCESS(
                        f"Paid {result.paid_now} bonus(es) now (${result.amount_paid_now}); "
                        f"{result.confirmed} earlier payment(s) confirmed on Prolific"
                    )
                )
                if result.unconfirmed:
                    self.stdout.write(
                        self.style.WARNING(
                            f"{result.unconfirmed} bonus(es) may have been paid (the answer was lost, or Prolific does "
                            "not show them yet): they are never paid again before Prolific's state says so"
                        )
                    )
                if result.needs_person:
                    self.stdout.write(self.style.WARNING(NEEDS_PERSON.format(result.needs_person)))
            elif o["confirm_paid"] or o["confirm_unpaid"]:
                done = prolific_bonuses.confirm_bonuses(batch, paid=o["confirm_paid"])
                text = f"{done.paid} bonus(es) recorded as paid"
                if o["confirm_unpaid"]:
                    text += f" (Prolific shows them paid now); {done.unpaid} to be paid by the next --pay"
                self.stdout.write(self.style.SUCCESS(text + "."))
            else:
                for line in describe(preview_bonuses(batch)):
                    self.stdout.write(line)
