import json as json_module

from django.core.serializers.json import DjangoJSONEncoder

from annotation.audit.selectors import audit_items, audit_progress
from annotation.audit.services.samples import draw_audit_sample, import_audit_labels
from annotation.management.commands._common import command_errors, get_batch
from core.management.cli import ProjectCommand, decimal_number, whole_number
from genderbias.crowd.audit_size import AUDIT_CLASS_ITEMS, MIN_AUDIT


class Command(ProjectCommand):
    help = (
        "A batch's expert audit sample: a seeded simple random sample of its queries (gold questions left out) "
        "that the researcher or annotators they trust label without seeing the crowd's answers; the "
        "prediction-powered intervals of the label-corrected figures rest on it (docs/quality.md, 'Audit samples'). "
        "--draw draws it (or, with the sample's seed and a larger --size, extends it: the queries drawn keep their "
        "place); --label-file F imports expert labels (qid<TAB>label[<TAB>labeller] lines, or CSV; every line or "
        "none; a bad line is named FILE:LINE); --show prints its state (--json: the state and every audited query). "
        "Labelling one query at a time: the batch's page, Audit sample."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="the batch")
        what = parser.add_mutually_exclusive_group(required=True)
        what.add_argument("--draw", action="store_true", help="draw the audit sample, or extend it")
        what.add_argument("--label-file", metavar="F", help="import expert labels from F")
        what.add_argument("--show", action="store_true", help="print the sample's state")
        parser.add_argument(
            "--size",
            type=whole_number,
            help=f"with --draw: queries to draw (default {AUDIT_CLASS_ITEMS} / --expected-share, rounded up, at least "
            f"{MIN_AUDIT}, at most the batch's queries)",
        )
        parser.add_argument(
            "--seed", type=whole_number, help="with --draw: the random seed (default: a fresh one, stored)"
        )
        parser.add_argument(
            "--expected-share",
            type=decimal_number,
            default=0.5,
            help="with --draw: expected share of non-gendered queries, for the default size (0.5)",
        )
        parser.add_argument(
            "--json", action="store_true", help="with --show: the state and the audited queries as JSON"
        )

    def handle(self, name, draw, label_file, show, size, seed, expected_share, json, **options):
        batch = get_batch(name)
        out = self.stdout.write
        with command_errors():
            if draw:
                sample = draw_audit_sample(batch, size=size, seed=seed, expected_share=float(expected_share))
                out(
                    f"Audit sample of {batch.name!r}: {sample.size} of {sample.population} queries, seed {sample.seed}. "
                    f"Label them on the batch's page (Audit sample) or import a file: --label-file F."
                )
                return
            if label_file:
                changed = import_audit_labels(batch, label_file)
                out(f"{changed} expert label{'s' if changed != 1 else ''} imported into {batch.name!r}'s audit sample.")
        progress = audit_progress(batch)
        if json:
            out(json_module.dumps({**progress, "items": audit_items(batch)}, cls=DjangoJSONEncoder, indent=2))
        elif not progress["drawn"]:
            out(f"{batch.name!r} has no audit sample ({progress['population']} queries to draw from): --draw.")
        elif show or label_file:
            out(
                f"Audit sample of {batch.name!r}: {progress['labelled']} of {progress['size']} labelled; "
                f"{progress['size']} of {progress['population']} queries drawn with seed {progress['seed']} by "
                f"{progress['drawn_by'] or 'the operator'} on {progress['drawn_at']:%Y-%m-%d %H:%M}; labelled by "
                f"{', '.join(progress['labellers']) or 'nobody yet'}."
            )
