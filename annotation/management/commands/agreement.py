import json

from annotation.management.commands._common import command_errors, get_batch
from annotation.results.selectors.agreement import agreement
from core.management.cli import ProjectCommand, whole_number
from genderbias.labels import LABEL_NAMES
from genderbias.ranking.defaults import LEVEL_PERCENT


def _number(value, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


class Command(ProjectCommand):
    help = (
        "Inter-annotator agreement of a batch: Krippendorff's alpha (with a bootstrap interval), "
        "per-category alpha, percent agreement, Fleiss' kappa, labels and set-aside queries."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="batch name")
        parser.add_argument("--json", action="store_true", help="print one JSON object instead of a summary")
        parser.add_argument(
            "--bootstrap",
            type=whole_number,
            default=None,
            help=f"bootstrap resamples for alpha's {LEVEL_PERCENT.replace('%', '%%')} CI (0 = none; default AGREEMENT_BOOTSTRAP_RESAMPLES, 1000)",
        )

    def handle(self, name, bootstrap, **o):
        batch = get_batch(name)
        with command_errors():
            report = agreement(batch, bootstrap=bootstrap)
        if o["json"]:
            self.stdout.write(json.dumps(report, ensure_ascii=False, sort_keys=True))
            return
        low, high = report["alpha_ci"]
        self.stdout.write(
            f"{report['queries']} queries, {report['judgments']} judgments by {report['workers']} workers"
        )
        self.stdout.write(
            f"Krippendorff's alpha {_number(report['krippendorff_alpha'])} ({LEVEL_PERCENT} CI {_number(low)}–{_number(high)}, "
            f"{report['bootstrap_resamples']} bootstrap resamples), "
            f"percent agreement {_number(report['percent_agreement'])}, Fleiss' kappa {_number(report['fleiss_kappa'])}, "
            f"Gwet's AC1 {_number(report['gwet_ac1'])}"
        )
        for label, count in report["labels"].items():
            alpha = report["per_category_alpha"].get(label)
            ac1 = report["per_category_ac1"].get(label)
            self.stdout.write(
                f"  {LABEL_NAMES[label]:<28} {count:>6} queries   alpha {_number(alpha)}   AC1 {_number(ac1)}"
            )
        self.stdout.write(f"Set aside (disputed or too few votes): {len(report['set_aside'])}")
