import argparse

from django.core.management.base import CommandError

from annotation.crowd.providers.base import all_batch_options, provider_class
from annotation.crowd.providers.options import OptionError
from annotation.crowd.selectors import batch_progress
from annotation.crowd.services.batch_settings import settings_from_options
from annotation.crowd.services.batches import create_batch, read_gold_file
from annotation.management.commands._common import command_errors, format_cost, qualifications
from core.management.cli import ProjectCommand, get_named
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
            "--gold",
            metavar="FILE",
            help="gold questions: qid<TAB>query<TAB>label (n/f/m/o), the study's qid,query,label, or queries:NAME "
            "(a labelled query set)",
        )
        parser.add_argument(
            "--training",
            metavar="FILE",
            help="qualification step (in-house annotators): qid<TAB>query<TAB>label queries with feedback, "
            "answered before a worker's first HIT of the batch",
        )
        parser.add_argument(
            "--qualification",
            action="append",
            metavar="SPEC",
            help="MTurk worker requirement, repeatable: locale=US,GB | approval-rate=95 | approved-hits=1000 | masters "
            "(the same as --locales, --min-approval-rate, --min-approved-hits, --masters)",
        )
        add_option_arguments(parser)

    def handle(self, **o):
        pool = get_named(Pool, o["pool"], "pool") if o["pool"] else None
        query_set = None if pool else get_named(QuerySet, o["queries"], "query set")
        if o["gold_per_hit"] and not o["gold"]:
            raise CommandError("--gold-per-hit needs --gold FILE")
        values = {name: o.get(name) for name in all_batch_options()}
        values.update(qualifications(o["qualification"]))
        if not o["gold"]:
            values["gold_per_hit"] = 0
        with command_errors():
            settings = settings_from_options(values)
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


#: How --help shows a value of each kind of option.
METAVARS = {"whole": "N", "share": "SHARE", "money": "USD", "duration": "DURATION", "codes": "CODES", "text": "TEXT"}


def add_option_arguments(parser) -> None:
    """The batch options as arguments, derived from the providers' declarations (``--help`` shows
    each one's help and default; a value is read by the option's own check, argparse naming the option)."""
    groups: dict[str, object] = {}
    for name, (option, owner) in all_batch_options().items():
        if option.cli is None:
            continue
        title = option.group or (f"{provider_class(owner).short_label} (with --provider {owner})" if owner else "")
        if title and title not in groups:
            groups[title] = parser.add_argument_group(title)
        target = groups[title] if title else parser
        default = option.default_text()
        help_text = option.help.rstrip(".").replace("%", "%%")
        if name == "provider":
            help_text = "the crowd platform: " + "; ".join(f"{value} ({label})" for value, label in option.choices)
        notes = [
            f"{option.minimum or 0} to {option.maximum}"
            if option.kind == "whole" and option.maximum is not None
            else "",
            "repeatable" if option.repeats and "repeatable" not in help_text else "",
            f"default {default}" if default else "",
        ]
        notes = [note for note in notes if note]
        kwargs: dict = {"dest": name, "help": f"{help_text} ({', '.join(notes)})" if notes else help_text}
        if option.kind == "flag":
            kwargs["action"] = "store_false" if option.default else "store_true"
            if not option.default:
                kwargs["default"] = None
        else:
            kwargs["type"] = _reader(option)
            kwargs["metavar"] = option.metavar or METAVARS.get(option.kind)
            if option.kind in ("choice", "choices"):
                kwargs["choices"], kwargs["type"], kwargs["metavar"] = option.values, str, None
            if option.repeats:
                kwargs["action"] = "append"
            elif default:
                kwargs["default"] = default
        target.add_argument(option.cli, **{k: v for k, v in kwargs.items() if v is not None or k == "default"})


def _reader(option):
    """argparse's ``type=`` for ``option``: its own reading of the text (one item of a list given
    repeatedly); a refusal argparse names the option in."""

    def read(text: str):
        try:
            if option.kind in ("choices", "batches") and option.read_flag is None:
                return option.parse([text])[0]
            return option.read_text(text)
        except OptionError as exc:
            if option.kind == "duration":  # argparse: "invalid duration value: 'soon'"
                raise ValueError(exc.problem) from None
            raise argparse.ArgumentTypeError(exc.problem) from None

    read.__name__ = option.kind  # argparse's "invalid <name> value" if anything else goes wrong
    return read
