import json as json_module

from annotation.machine.report.selectors import calibration_report
from annotation.management.commands._common import command_errors, get_batch
from core.management.cli import ProjectCommand, whole_number
from genderbias.labels import LABEL_NAMES, LABELS


def _ci(pair) -> str:
    return "-" if not pair else f"[{pair[0]:.3f}, {pair[1]:.3f}]"


def _num(value) -> str:
    return "-" if value is None else f"{value:.3f}"


class Command(ProjectCommand):
    help = (
        "How good the machine's labels are, measured on the batch's blind calibration sample: accuracy, "
        "Cohen's kappa with a bootstrap CI, precision and recall per category, confusion matrix, expected "
        "calibration error and Brier score, the machine's accuracy against the true label and the ceiling "
        "the crowd's own noise sets (Dawid-Skene), the Alternative Annotator Test, and each category's share "
        "of the batch by prediction-powered inference (PPI++)."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="the machine-labelled batch")
        parser.add_argument(
            "--labeller", help="which pre-labeller to assess (default: the one the sample was drawn by)"
        )
        parser.add_argument("--json", action="store_true", help="print the report as JSON")
        parser.add_argument(
            "--bootstrap", type=whole_number, default=2000, help="bootstrap resamples for kappa's CI (default 2000)"
        )

    def handle(self, name, labeller, json: bool, bootstrap, **o):
        batch = get_batch(name)
        with command_errors():
            report = calibration_report(batch, labeller, bootstrap=bootstrap)
        if json:
            self.stdout.write(json_module.dumps(report, indent=2, default=str))
            return
        out = self.stdout.write
        out(
            f"{report['labeller']} ({report['model']}, {report['prompt_version']}) against the crowd on "
            f"{report['sample_batch']}: {report['n']} queries ({report['pending']} still without a crowd label)"
        )
        out(
            f"Accuracy against the crowd majority {report['accuracy']:.3f}   "
            f"Cohen's kappa {report['kappa']:.3f} {_ci(report['kappa_ci'])}"
        )
        out(f"ECE {report['ece']:.3f}   Brier {report['brier']:.3f}")
        for line in against_truth_lines(report["against_truth"]):
            out(line)
        out("")
        out(f"{'category':<26} {'precision':>9} {'recall':>7} {'support':>7}")
        for label in LABELS:
            c = report["per_category"][label]
            out(f"{LABEL_NAMES[label]:<26} {_num(c['precision']):>9} {_num(c['recall']):>7} {c['support']:>7}")
        out("")
        out("Confusion (rows: crowd, columns: machine, weighted to the batch):")
        width = max(len(name) for name in LABEL_NAMES.values()) + 2  # full names, never cut
        out(" " * 26 + "".join(f"{LABEL_NAMES[label]:>{width}}" for label in LABELS))
        for label, row in zip(LABELS, report["confusion"], strict=True):
            out(f"{LABEL_NAMES[label]:<26}" + "".join(f"{value:>{width}.1f}" for value in row))
        out("")
        for line in alt_test_lines(report["alt_test"]):
            out(line)
        out("")
        out(f"{'share of the batch':<26} {'PPI++ estimate':>15} {'95% CI':>18} {'machine alone':>14}")
        for label in LABELS:
            p = report["proportions"][label]
            out(f"{LABEL_NAMES[label]:<26} {p['estimate']:>15.3f} {_ci(p['ci']):>18} {p['machine_only']:>14.3f}")


def against_truth_lines(truth: dict) -> list[str]:
    """The crowd's measured reliability: the machine against the true label, and the ceiling."""
    # numpy's module: not loaded for the command's --help
    from genderbias.crowd.reliability import quality_sentence  # start-up
    from genderbias.crowd.shared_errors import shared_errors_sentence  # start-up

    return [
        "",
        f"Against the truth (Dawid-Skene on the sample's votes with {truth['gold']} answer(s) to gold questions, "
        f"the machine as one more annotator; {truth['items']} queries):",
        f"  machine's accuracy against the true label (de-noised)  {_num(truth['accuracy_true'])} "
        f"{_ci(truth['accuracy_true_ci'] if None not in truth['accuracy_true_ci'] else None)} "
        "(assumes the machine's and the crowd's errors independent given the true label: errors shared on "
        "hard queries make it optimistic)",
        f"  {shared_errors_sentence(truth.get('shared_errors'))}",
        f"  {quality_sentence(truth.get('quality'))}",
        f"  ceiling: the best accuracy against a {truth['votes_per_query']}-vote crowd majority any machine "
        f"can expect  {_num(truth['ceiling'])}",
        f"  a second, independent crowd majority agrees with the first  {_num(truth['self_agreement'])}",
        f"  the crowd majority is the true label  {_num(truth['crowd_accuracy'])}; "
        f"queries left disputed  {_num(truth['disputed'])}",
    ]


def alt_test_lines(alt: dict) -> list[str]:
    """The alt-test in words: a verdict only when enough annotators were tested, else why not and
    the sample size that would do."""
    tested = len(alt["annotators"])
    head = (
        f"Alternative Annotator Test (epsilon {alt['epsilon']}, alpha {alt['alpha']}) on {alt['items']} sample "
        f"queries with two or more votes: {tested} annotator(s) with at least {alt['min_items']} of them"
    )
    if alt["informative"]:
        return [f"{head}; winning rate {alt['winning_rate']:.2f}: {alt['verdict']}."]
    lines = [f"{head}; {alt['min_annotators']} are needed: not informative at this sample size."]
    if alt["winning_rate"] is not None:
        lines.append(f"  (winning rate {alt['winning_rate']:.2f} over {tested}: no verdict drawn from it)")
    if alt["needed_sample"] is not None:
        lines.append(
            f"  At each annotator's rate in this sample of {alt['sample_size']}, about {alt['needed_sample']} "
            f"sample queries would give {alt['min_annotators']} annotators {alt['min_items']} queries each."
        )
    else:
        lines.append(f"  Fewer than {alt['min_annotators']} annotators answered: no sample size would do.")
    return lines
