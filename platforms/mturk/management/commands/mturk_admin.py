from django.core.management.base import CommandError
from django.utils import timezone

from annotation.management.commands._common import command_errors, duration, get_batch, money
from annotation.models import Assignment, Worker
from core.management.cli import ProjectCommand, whole_number
from platforms.mturk import services as mturk_admin


class Command(ProjectCommand):
    help = (
        "MTurk requester chores. Subcommands: balance; expire BATCH --hit N; extend BATCH --hit N --by 2d; "
        "add-assignments BATCH --hit N --count K; bonus ASSIGNMENT_ID --amount 0.50 --reason TEXT; "
        "block-worker PSEUDONYM --reason TEXT. Uses MTURK_ENDPOINT_URL / MTURK_LIVE like the other commands."
    )

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        sub.add_parser("balance", help="the account's available balance")
        for name, text in (("expire", "stop offering a HIT"), ("extend", "offer a HIT for longer")):
            p = sub.add_parser(name, help=text)
            p.add_argument("batch")
            p.add_argument("--hit", type=whole_number, required=True, help="HIT position within the batch (1-based)")
            if name == "extend":
                p.add_argument("--by", type=duration, required=True, help="from now, e.g. 2d")
        p = sub.add_parser("add-assignments", help="more workers for one HIT")
        p.add_argument("batch")
        p.add_argument("--hit", type=whole_number, required=True, help="HIT position within the batch (1-based)")
        p.add_argument("--count", type=whole_number, required=True)
        p = sub.add_parser("bonus", help="pay a bonus for an assignment")
        p.add_argument("assignment_id", help="the MTurk AssignmentId")
        p.add_argument("--amount", type=money, required=True, help="USD")
        p.add_argument("--reason", required=True, help="shown to the worker")
        p = sub.add_parser("block-worker", help="block a worker, named by pseudonym")
        p.add_argument("pseudonym")
        p.add_argument("--reason", required=True, help="shown to the worker")

    def handle(self, action, **o):
        with command_errors():
            if action == "balance":
                self.stdout.write(f"Available balance: ${mturk_admin.account_balance()}")
            elif action in ("expire", "extend", "add-assignments"):
                hit = mturk_admin.find_hit(get_batch(o["batch"]), o["hit"])
                if action == "expire":
                    mturk_admin.expire_hit(hit)
                    self.stdout.write(self.style.SUCCESS(f"{hit} expired."))
                elif action == "extend":
                    until = timezone.now() + o["by"]
                    mturk_admin.extend_hit(hit, until)
                    self.stdout.write(self.style.SUCCESS(f"{hit} offered until {until:%Y-%m-%d %H:%M} UTC."))
                else:
                    mturk_admin.add_assignments(hit, o["count"])
                    self.stdout.write(self.style.SUCCESS(f"{hit}: {o['count']} more assignment(s)."))
            elif action == "bonus":
                assignment = Assignment.objects.filter(provider_assignment_id=o["assignment_id"]).first()
                if assignment is None:
                    raise CommandError(f"no assignment {o['assignment_id']!r} (run sync_batch first)")
                mturk_admin.send_bonus(assignment, o["amount"], o["reason"])
                self.stdout.write(self.style.SUCCESS(f"Bonus of ${o['amount']} sent to {assignment.worker}."))
            elif action == "block-worker":
                worker = Worker.objects.filter(pseudonym=o["pseudonym"]).first()
                if worker is None:
                    raise CommandError(f"no worker with pseudonym {o['pseudonym']!r}")
                mturk_admin.block_worker(worker, o["reason"])
                self.stdout.write(self.style.SUCCESS(f"Worker {worker} blocked."))
