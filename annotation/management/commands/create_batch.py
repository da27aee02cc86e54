from django.core.management.base import CommandError

from annotation.crowd.selectors import batch_progress
from annotation.crowd.services.batch_settings import BatchSettings
from annotation.crowd.services.batches import create_batch, read_gold_file
from annotation.management.commands._common import (
    command_errors,
    duration,
    format_cost,
    money,
    prolific_filter,
    qualifications,
)
from annotation.models import Provider
from core.management.cli import ProjectCommand
from pooling.models import Pool, QuerySet


class Command(ProjectCommand):
    help = (
        "Create an annotation batch: snapshot the queries of a pool or query set, group them into HITs "
        "and print the cost. Nothing is sent to a provider until publish_batch."
    )

    def add_arguments(self, parser):
        parser.add_argument("--name", required=True, help="name of the new batch (a slug)")
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--pool", help="annotate the queries of this pool")
        source.add_argument("--queries", help="annotate the queries of this query set")
        parser.add_argument(
            "--provider", choices=Provider.values, default=Provider.LOCAL, help="local, mturk or prolific"
        )
        parser.add_argument("--assignments", type=int, default=3, help="workers per query (default 3)")
        parser.add_argument("--queries-per-hit", type=int, default=10, help="queries on one HIT page (default 10)")
        parser.add_argument("--reward", type=money, default="0.05", help="USD per assignment (default 0.05)")
        parser.add_argument("--lifetime", type=duration, default="7d", help="how long HITs are offered (default 7d)")
        parser.add_argument(
            "--assignment-duration", type=duration, default="30m", help="time a worker has for a HIT (default 30m)"
        )
        parser.add_argument(
            "--auto-approve", type=duration, default="3d", help="MTurk approves submitted work after this (default 3d)"
        )
        parser.add_argument(
            "--qualification",
            action="append",
            metavar="SPEC",
            help="MTurk worker requirement, repeatable: locale=US,GB | approval-rate=95 | approved-hits=1000 | masters",
        )
        parser.add_argument("--gold", metavar="FILE", help="gold questions: qid<TAB>query<TAB>label (n/f/m/o)")
        parser.add_argument("--gold-per-hit", type=int, default=0, help="gold questions mixed into each HIT")
        parser.add_argument(
            "--no-gold-feedback",
            dest="gold_feedback",
            action="store_false",
            help="do not tell workers which gold questions they got wrong (only how many)",
        )
        parser.add_argument("--seed", type=int, default=0, help="seed of the query shuffle (default 0)")
        parser.add_argument(
            "--training",
            metavar="FILE",
            help="qualification step (in-house annotators): qid<TAB>query<TAB>label queries with feedback, "
            "answered before a worker's first HIT of the batch",
        )
        parser.add_argument(
            "--training-pass",
            type=float,
            default=0.8,
            metavar="SHARE",
            help="share of the training queries to get right to be given HITs (default 0.8)",
        )
        quality = parser.add_argument_group("quality thresholds, applied at every sync_batch (shares in [0, 1])")
        for option, what in (
            ("--warn-gold", "flag workers whose gold accuracy is below this"),
            ("--block-gold", "block workers whose gold accuracy is below this"),
            ("--warn-agreement", "flag workers agreeing with the majority less often than this"),
            ("--block-agreement", "block workers agreeing with the majority less often than this"),
        ):
            quality.add_argument(option, type=float, metavar="SHARE", help=what)
        quality.add_argument(
            "--min-answers",
            type=int,
            default=10,
            help="gold answers or compared judgments a worker needs before a threshold applies (default 10)",
        )
        parser.add_argument(
            "--budget",
            type=money,
            help="USD that re-offered places and escalations may add to the estimate (default: no limit)",
        )
        prolific = parser.add_argument_group("Prolific (with --provider prolific)")
        prolific.add_argument(
            "--estimated-minutes", type=int, help="minutes one HIT group takes, shown to participants (default 10)"
        )
        prolific.add_argument(
            "--device", action="append", choices=["desktop", "tablet", "mobile"], help="allowed device, repeatable"
        )
        prolific.add_argument(
            "--filter",
            action="append",
            type=prolific_filter,
            metavar="ID=VALUES",
            help="eligibility filter, repeatable: FILTER_ID=value1,value2 (Prolific's filter ids and values)",
        )
        prolific.add_argument("--bonus", type=money, help="USD paid on top of the reward for approved work")
        prolific.add_argument(
            "--exclude-batch",
            action="append",
            metavar="BATCH",
            help="exclude everyone who took part in this earlier Prolific batch, repeatable",
        )
        # Participant groups across waves and the bonus rule (issue 32).
        prolific.add_argument(
            "--allow-batch",
            action="append",
            metavar="BATCH",
            help="only participants who took part in this other Prolific batch may take this one, repeatable",
        )
        prolific.add_argument(
            "--admit-gold-failures",
            action="store_true",
            help="do not block participants who failed another batch's gold threshold (blocked by default)",
        )
        prolific.add_argument(
            "--bonus-rule",
            metavar="KIND:USD",
            help="a bonus rule paid with manage.py prolific_bonus: flat:0.50 (per approved participant) "
            "or per_gold:0.10 (per check question right in approved work)",
        )

    def handle(self, **o):
        pool = query_set = None
        if o["pool"]:
            pool = Pool.objects.filter(name=o["pool"]).first()
            if pool is None:
                raise CommandError(f"no pool named {o['pool']!r}")
        else:
            query_set = QuerySet.objects.filter(name=o["queries"]).first()
            if query_set is None:
                raise CommandError(f"no query set named {o['queries']!r}")
        if o["gold_per_hit"] and not o["gold"]:
            raise CommandError("--gold-per-hit needs --gold FILE")
        settings = BatchSettings(
            provider=o["provider"],
            assignments_per_query=o["assignments"],
            queries_per_hit=o["queries_per_hit"],
            reward=o["reward"],
            lifetime=o["lifetime"],
            assignment_duration=o["assignment_duration"],
            auto_approval_delay=o["auto_approve"],
            qualifications=qualifications(o["qualification"]),
            gold_per_hit=o["gold_per_hit"] if o["gold"] else 0,
            gold_feedback=o["gold_feedback"],
            seed=o["seed"],
            provider_options=prolific_options(o),
            warn_gold_accuracy=o["warn_gold"],
            block_gold_accuracy=o["block_gold"],
            warn_agreement=o["warn_agreement"],
            block_agreement=o["block_agreement"],
            min_answers_judged=o["min_answers"],
            extra_budget=o["budget"],
            training_pass_fraction=o["training_pass"],
        )
        with command_errors():
            gold = read_gold_file(o["gold"]) if o["gold"] else []
            training = read_gold_file(o["training"]) if o["training"] else []
            batch = create_batch(o["name"], settings, query_set=query_set, pool=pool, gold=gold, training=training)
        progress = batch_progress(batch)
        self.stdout.write(
            self.style.SUCCESS(
                f"Batch {batch.name!r}: {progress['queries']} queries in {progress['hits']} HITs "
                f"of {batch.queries_per_hit}, {batch.assignments_per_query} assignments each ({batch.provider})"
            )
        )
        self.stdout.write(f"Cost: {format_cost(batch.cost)}")
        self.stdout.write(f"Publish it with: manage.py publish_batch {batch.name}")


def prolific_options(o: dict) -> dict:
    """The Prolific options given on the command line (only those given)."""
    options = {
        "estimated_minutes": o["estimated_minutes"],
        "devices": o["device"],
        "filters": o["filter"],
        "bonus": str(o["bonus"]) if o["bonus"] is not None else None,
        "exclude_batches": o["exclude_batch"],
        "allow_batches": o.get("allow_batch"),
        "admit_gold_failures": True if o.get("admit_gold_failures") else None,
        "bonus_rule": bonus_rule_option(o.get("bonus_rule")),
    }
    return {key: value for key, value in options.items() if value is not None}


def bonus_rule_option(text: str | None) -> dict | None:
    """``flat:0.50`` or ``per_gold:0.10`` as the stored rule (checked with the batch's settings)."""
    if not text:
        return None
    kind, _, amount = text.partition(":")
    return {"kind": kind.strip(), "amount": amount.strip()}
