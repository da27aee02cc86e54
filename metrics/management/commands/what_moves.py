import json

from core.management.cli import ProjectCommand, add_option, command_errors, get_named, whole_number
from core.options import CUTOFF_OPTION
from metrics import selectors
from metrics.models import Report


class Command(ProjectCommand):
    help = (
        "What moves a conclusion, in a report on a batch's labels (bias_report --from-batch): for RUN's "
        "label-corrected difference against the report's baseline on one metric, the judged queries by "
        "expected shift (how far settling the query's label would move the difference, averaged over the "
        "labels it may have), with P(non-gendered) and the move if it is or is not non-gendered; settle the "
        "first ones in the batch's review queue (/annotation/batches/<batch>/review/?qid=…). "
        "The same as the report page's 'what moves it' and GET /api/metrics/reports/<name>/contributions/."
    )

    def add_arguments(self, parser):
        parser.add_argument("report", help="name of a report on a batch's labels")
        parser.add_argument("--run", required=True, help="a run of the report other than its baseline")
        parser.add_argument("--metric", default="ARaB", help="metric (default ARaB)")
        parser.add_argument("--variant", default="tf", help="variant (default tf)")
        add_option(parser, CUTOFF_OPTION)
        parser.add_argument("--limit", type=whole_number, default=20, help="queries listed (default 20)")
        parser.add_argument("--json", action="store_true", help="print the result as JSON")

    def handle(self, **o):
        report = get_named(Report.objects.filter(label_batch__isnull=False), o["report"], "report on a batch's labels")
        with command_errors():
            found = selectors.report_contributions(
                report, o["run"], o["metric"], o["variant"], o["cutoff"], max(1, o["limit"])
            )
        if o["json"]:
            self.stdout.write(json.dumps(found, indent=2))
            return
        corrected = "–" if found["difference"] is None else f"{found['difference']:.4f}"
        self.stdout.write(
            f"{found['metric']}@{found['cutoff']} [{found['variant']}] of {found['run']} − {found['baseline']}: "
            f"label-corrected difference {corrected} ({found['uncertain']} judged queries between 5% and 95% sure)"
        )
        header = f"{'qid':<14}{'difference':>11}{'P(n)':>7}{'if n':>10}{'if not n':>10}{'expected shift':>16}  label"
        self.stdout.write(header + "\n" + "-" * len(header))

        def number(value, width: int, digits: int = 4) -> str:
            return f"{'–':>{width}}" if value is None else f"{value:>{width}.{digits}f}"

        for row in found["rows"]:
            self.stdout.write(
                f"{row['qid']:<14}{number(row['difference'], 11)}{number(row['probability'], 7, 2)}"
                f"{number(row['if_non_gendered'], 10)}{number(row['if_gendered'], 10)}"
                f"{number(row['expected_shift'], 16, 5)}  {row['label'] or '–'} ({row['source'] or 'unlabelled'})"
            )
