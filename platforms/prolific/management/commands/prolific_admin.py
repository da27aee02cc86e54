from django.core.management.base import BaseCommand, CommandError

from annotation.management.commands._common import command_errors, get_batch
from annotation.models import Provider, Worker
from platforms.prolific import services as prolific


class Command(BaseCommand):
    help = (
        "Prolific chores. Subcommands: quote BATCH (Prolific's own price: fees and VAT of your account); "
        "block PSEUDONYM (no more HITs here, and excluded from later studies); "
        "confirm-bonuses BATCH --paid|--not-paid (after checking on Prolific a bonus payment whose answer was lost). "
        "Uses PROLIFIC_API_URL / PROLIFIC_API_TOKEN / PROLIFIC_PROJECT_ID like the other commands."
    )

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        p = sub.add_parser("quote", help="Prolific's cost calculator for the batch's places")
        p.add_argument("batch")
        p = sub.add_parser("block", help="block a Prolific participant, named by pseudonym")
        p.add_argument("pseudonym")
        p = sub.add_parser("confirm-bonuses", help="settle bonus payments whose answer was lost")
        p.add_argument("batch")
        outcome = p.add_mutually_exclusive_group(required=True)
        outcome.add_argument("--paid", action="store_true", help="Prolific shows them paid: record that")
        outcome.add_argument("--not-paid", action="store_true", help="Prolific shows no payment: pay at next sync")

    def handle(self, action, **o):
        with command_errors():
            if action == "quote":
                batch = get_batch(o["batch"])
                if batch.provider != Provider.PROLIFIC:
                    raise CommandError(f"batch {batch.name!r} is not a Prolific batch")
                price = prolific.quote(batch)
                self.stdout.write(
                    f"Prolific's price for {prolific.total_places(batch)} place(s) at ${batch.reward}: ${price:.2f} "
                    f"(estimated here with the documented fee: ${batch.cost.get('total')})"
                )
            elif action == "block":
                worker = Worker.objects.filter(pseudonym=o["pseudonym"]).select_related("identity").first()
                if worker is None:
                    raise CommandError(f"no worker with pseudonym {o['pseudonym']!r}")
                prolific.block_participant(worker)
                self.stdout.write(self.style.SUCCESS(f"Blocked {worker.pseudonym}."))
            else:
                from platforms.prolific.bonuses.services import confirm_bonuses  # the one bonus path

                batch = get_batch(o["batch"])
                done = confirm_bonuses(batch, paid=o["paid"])
                text = f"{done.paid} bonus payment(s) recorded as paid"
                if done.unpaid:
                    text += f"; {done.unpaid} to be paid at the next pay (or sync, for a rule paid at every sync)"
                self.stdout.write(self.style.SUCCESS(text + "."))
