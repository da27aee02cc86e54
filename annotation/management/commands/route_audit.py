import json as json_module

from annotation.machine.services.calibration import DEFAULT_SAMPLE
from annotation.machine.services.routing import DEFAULT_RISK, audit_routing
from annotation.management.commands._common import command_errors, get_batch
from core.management.cli import ProjectCommand, decimal_number, whole_number
from core.progress import Progress


class Command(ProjectCommand):
    help = (
        "Check routing's guarantee on a batch's own machine labels before paying a crowd. Redraws the blind "
        "sample --redraws times exactly as 'calibrate --sample N --seed r' would (r = 0, 1, ...), takes the "
        "labels of FILE as the crowd's, certifies a threshold on each redraw as 'route --risk' does and "
        "compares its accepted set with FILE. Prints the violation rate (share of redraws whose accepted set "
        "is less accurate than the target: at most --risk, up to Monte-Carlo error), the kept share (accepted "
        "queries as a fraction of the batch) and the oracle's kept share (the largest threshold set that truly "
        "meets the target). FILE: a labelled file as the trained labeller reads it (qid<TAB>query<TAB>label, "
        "or the study's CSV qid,query,label), labelling every machine-labelled query of the batch; its labels are "
        "read as the TRUE labels, and --crowd says who labels the sample: 'fitted' (the crowd model fitted to the "
        "batch's calibration sample; the default when it has votes), a JSON crowd model FILE (workers with share "
        "and accuracy, or always / spam; docs/prelabelling.md), or 'none' (FILE is a noise-free crowd: the old "
        "reading, optimistic with a real crowd). With a crowd, each redraw simulates it labelling the sample "
        "(undecided queries escalated by the reference rule), the routed queries and, for comparison, every query."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="the machine-labelled batch")
        parser.add_argument(
            "--labels",
            required=True,
            metavar="FILE",
            help="the labelled file (or queries:NAME, a labelled query set) taken as the crowd's",
        )
        parser.add_argument(
            "--target-accuracy",
            type=decimal_number,
            required=True,
            help="accuracy the accepted labels must reach, e.g. 0.95",
        )
        parser.add_argument(
            "--risk", type=decimal_number, default=DEFAULT_RISK, help=f"the guarantee's δ (default {DEFAULT_RISK})"
        )
        parser.add_argument(
            "--sample",
            type=whole_number,
            default=DEFAULT_SAMPLE,
            help=f"blind sample size per redraw (default {DEFAULT_SAMPLE})",
        )
        parser.add_argument(
            "--redraws", type=whole_number, default=1000, help="how many samples to draw (default 1000)"
        )
        parser.add_argument("--labeller", help="whose labels (default: the batch's latest pre-labeller)")
        parser.add_argument("--crowd", help="fitted, none or a crowd model FILE (JSON); see above")
        parser.add_argument(
            "--escalation-cap", type=whole_number, help="the reference rule's cap (default: the sample's, else 7)"
        )
        parser.add_argument("--until", default="majority", help="majority or posterior:P (default: the sample's)")
        parser.add_argument(
            "--extendable", action="store_true", help="forecast an extendable sample (δ split; default: drawn whole)"
        )
        parser.add_argument("--cascade", help="labellers in sequence, as route --cascade")
        parser.add_argument("--json", action="store_true", help="print the result as JSON")

    def handle(self, name, labels, target_accuracy, risk, sample, redraws, labeller, json, **o):
        cascade = [item.strip() for item in (o["cascade"] or "").split(",") if item.strip()] or None
        batch = get_batch(name)
        bar = Progress("Redrawing the blind sample", total=redraws, unit="redraw", bar=o["verbosity"] > 0)
        with command_errors(), bar:  # the options' rules are audit_routing's; a refusal names the option
            result = audit_routing(
                batch,
                labels,
                target_accuracy,
                risk=risk,
                sample=sample,
                redraws=redraws,
                labeller=labeller,
                progress=bar.advance,
                crowd=o["crowd"],
                escalation_cap=o["escalation_cap"],
                until=o["until"],
                extendable=o["extendable"],
                cascade=cascade,
            )
        if json:
            self.stdout.write(json_module.dumps(result, indent=2))
            return
        mc = (result["risk"] * (1 - result["risk"]) / result["redraws"]) ** 0.5
        out = self.stdout.write
        out(
            f"{result['redraws']} redraws of a {result['sample']}-query blind sample of {result['batch']!r} "
            f"({result['population']} machine-labelled queries by {result['labeller']}, {result['true_accuracy']:.3f} "
            f"right against {result['labels']}); target {result['target']}, risk {result['risk']}:"
        )
        out(
            f"  violation rate     {result['violation_rate']:.4f}  (accepted set below the target; the guarantee: "
            f"at most {result['risk']} ± {mc:.4f} Monte-Carlo s.e.)"
        )
        out(f"  certified          {result['certified_rate']:.4f}  of the redraws")
        out(
            f"  kept share         {result['kept_share']:.4f}  of the batch (machine-labelled outside the sample: "
            f"{result['machine_labelled_share']:.4f})"
        )
        out(f"  crowd              {result['crowd']}; right means agreeing with {result['reference']}")
        if "oracle_kept_share" in result:
            oracle = result["oracle_threshold"]
            out(
                f"  oracle kept share  {result['oracle_kept_share']:.4f}  (threshold "
                f"{'none' if oracle is None else f'{oracle:.3f}'}: the largest set that truly meets the target)"
            )
            return
        out(
            f"  against the truth  {result['violation_rate_truth']:.4f}  of redraws with machine-kept labels below the "
            f"target; their accuracy {_fmt(result['machine_accuracy_truth'])}"
        )
        out(
            f"  sample             {result['first_round_split']:.3f} split after the first votes, "
            f"{result['undecided_share']:.3f} still undecided after escalation; its reference labels "
            f"{result['reference_accuracy']:.3f} right"
        )
        out(
            f"  export accuracy    {result['export_accuracy']:.4f}  against the truth (crowd only: "
            f"{result['crowd_only_accuracy']:.4f})"
        )
        out(
            f"  assignments        {result['assignments']:.1f}  on the machine path (sample {result['sample_assignments']:.1f}"
            f", of them escalations {result['sample_escalations']:.1f}); crowd only {result['crowd_only_assignments']:.1f}"
        )
        if len(result["per_stage_kept"]) > 1:
            shares = ", ".join(
                f"{stage} {share:.4f}" for stage, share in zip(result["cascade"], result["per_stage_kept"], strict=True)
            )
            out(f"  per labeller       {shares} of the batch")


def _fmt(value) -> str:
    return "none kept" if value is None else f"{value:.4f}"
