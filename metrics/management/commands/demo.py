"""The whole researcher's path on synthetic data (``bin/demo``): it drives every app, so it lives in the app on top
(imports flow downwards)."""

from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from annotation.models import Batch
from annotation.services import plan_routing
from core.management.cli import ProjectCommand, whole_number
from metrics.models import Report
from metrics.selectors import report_summary
from pooling.models import Collection, Pool, Qrels, QuerySet, Run

RUNS = ("ranker-a", "ranker-b", "ranker-c")
#: The report on the machine-labelled batch's labels (intervals with the labels' uncertainty).
LABELS_REPORT = "demo-machine-labels"
QRELS = "demo-qrels"
#: The summary's columns at rank 10: effectiveness (against the demo's qrels), then bias.
SUMMARY_CUTOFF = 10
SUMMARY_COLUMNS = (
    ("RR", QRELS), ("nDCG", QRELS), ("R", QRELS), ("P", QRELS),
    ("ARaB", "tf"), ("ARaB", "bool"), ("NFaiRR", "collection"), ("TExFAIR", "rbdf"),
)  # fmt: skip


#: The metric the demo's study plan is for.
PLAN_METRIC = "ARaB"


def most_different(summary, metric: str, variant: str, cutoff: int) -> tuple[str, str]:
    """The two runs farthest apart on one metric (larger value first)."""
    at = summary[(summary["metric"] == metric) & (summary["variant"] == variant) & (summary["cutoff"] == cutoff)]
    ordered = at.dropna(subset=["value"]).sort_values("value", ascending=False)["run"].tolist()
    return ordered[0], ordered[-1]


def plan_delta(summary, a: str, b: str) -> float:
    """The difference the plan is for: the pilot's own difference of ``a`` and ``b``, to two significant digits."""
    at = summary[
        (summary["metric"] == PLAN_METRIC) & (summary["variant"] == "tf") & (summary["cutoff"] == SUMMARY_CUTOFF)
    ]
    values = dict(zip(at["run"], at["value"], strict=True))
    return float(f"{abs(values[a] - values[b]):.2g}") or 0.01


def summary_table(summary) -> str:
    """Effectiveness beside bias at ``SUMMARY_CUTOFF``: one row per run, one column per measure."""
    at = summary[summary["cutoff"] == SUMMARY_CUTOFF]
    values = {(r.run, r.metric, r.variant): r.value for r in at.itertuples(index=False)}
    runs = list(dict.fromkeys(at["run"]))
    width = max(10, *(len(run) for run in runs)) + 2
    heads = [
        f"{metric}@{SUMMARY_CUTOFF}" if variant == QRELS else f"{metric}[{variant}]"
        for metric, variant in SUMMARY_COLUMNS
    ]
    cells = [max(len(h), 6) + 3 for h in heads]
    lines = ["run".ljust(width) + "".join(h.rjust(c) for h, c in zip(heads, cells, strict=True))]
    for run in runs:
        row = (values.get((run, metric, variant)) for metric, variant in SUMMARY_COLUMNS)
        lines.append(
            run.ljust(width)
            + "".join(("—" if v is None or v != v else f"{v:.4f}").rjust(c) for v, c in zip(row, cells, strict=True))
        )
    return "\n".join(lines)


class Command(ProjectCommand):
    help = (
        "Run the whole path on a small synthetic collection: import, pool, annotate with simulated "
        "in-house annotators, review agreement, export the non-gendered queries and measure the "
        "runs' bias on them, with their effectiveness (MRR, nDCG, recall, precision at 10) against "
        "synthetic qrels. Safe to run again: finished steps are skipped. Creates the superuser demo/demo "
        "(with DEBUG off only when told: --create-demo-user)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--passages", type=whole_number, default=20_000, help="synthetic collection size (default 20,000)"
        )
        parser.add_argument("--queries", type=whole_number, default=600, help="synthetic queries (default 600)")
        account = parser.add_mutually_exclusive_group()
        account.add_argument(
            "--create-demo-user",
            action="store_true",
            help="create the superuser demo (password demo) even with DEBUG off: anyone who reaches the site "
            "could then log in as a superuser",
        )
        account.add_argument("--no-demo-user", action="store_true", help="run the path without the demo account")

    def step(self, title: str) -> None:
        self.stdout.write(self.style.MIGRATE_HEADING(f"==> {title}"))

    def handle(self, passages, queries, create_demo_user=False, no_demo_user=False, **options):
        user_model = get_user_model()
        make_user = not no_demo_user and not user_model.objects.filter(username="demo").exists()
        if make_user and not settings.DEBUG and not create_demo_user:  # refused before any work
            raise CommandError(
                "DEBUG is off (a production site): the demo would create the superuser 'demo' with the password "
                "'demo', which anyone who reaches the site could log in with. Pass --create-demo-user to create it "
                "anyway, or --no-demo-user to run the demo without it (bin/demo runs with DJANGO_DEBUG=1)"
            )
        out = Path(settings.VAR_DIR) / "demo"
        out.mkdir(parents=True, exist_ok=True)
        from pooling.synthetic import SyntheticSpec, write_collection, write_qrels, write_queries, write_runs

        spec = SyntheticSpec(passages=passages, queries=queries, runs=len(RUNS), depth=50)
        if not (out / "collection.tsv").exists():
            self.step(
                f"Writing a synthetic collection ({passages:,} passages), {queries:,} queries and {len(RUNS)} runs to {out}"
            )
            write_collection(out / "collection.tsv", spec)
            write_queries(out / "queries.tsv", spec)
            for path, name in zip(write_runs(out, out / "queries.tsv", spec), RUNS, strict=True):
                path.rename(out / f"{name}.trec")
        if not (out / "qrels.txt").exists():  # graded judgments: ranker-a is made the most effective
            self.step("Writing synthetic relevance judgments (qrels) of the queries")
            write_qrels(out / "qrels.txt", [out / f"{name}.trec" for name in RUNS], spec)

        self.step("Pooling")
        if not Collection.objects.filter(name="demo").exists():
            call_command("import_collection", str(out / "collection.tsv"), "--name", "demo")
        if not QuerySet.objects.filter(name="demo-queries").exists():
            call_command("import_queries", str(out / "queries.tsv"), "--name", "demo-queries")
        for name in RUNS:
            if not Run.objects.filter(name=name).exists():
                call_command("import_run", str(out / f"{name}.trec"), "--name", name, "--collection", "demo")
        if not Qrels.objects.filter(name=QRELS).exists():
            call_command(
                "import_qrels", str(out / "qrels.txt"), "--name", QRELS,
                "--queries", "demo-queries", "--collection", "demo",
            )  # fmt: skip
        if not Pool.objects.filter(name="demo-pool").exists():
            call_command(
                "pool", "--name", "demo-pool", "--queries", "demo-queries", "--runs", ",".join(RUNS),
                "--rank-cutoff", "10", "--depth", "100", "--out", str(out / "pool.tsv"),
            )  # fmt: skip

        self.step("Annotation with simulated in-house annotators")

        if not Batch.objects.filter(name="demo-batch").exists():
            call_command(
                "create_batch", "--name", "demo-batch", "--pool", "demo-pool", "--provider", "local",
                "--assignments", "3", "--queries-per-hit", "10", "--reward", "0.05",
            )  # fmt: skip
            call_command("publish_batch", "demo-batch")
            call_command("simulate_annotations", "demo-batch")

        self.step("Agreement")
        call_command("agreement", "demo-batch")

        self.step("Machine labels first: the rules pre-labeller, calibrated on a blind crowd sample, then routing")
        if not Batch.objects.filter(name="demo-machine").exists():
            call_command(
                "create_batch", "--name", "demo-machine", "--pool", "demo-pool", "--provider", "local",
                "--assignments", "3", "--queries-per-hit", "10", "--reward", "0.05",
            )  # fmt: skip
            call_command("prelabel", "demo-machine", "--labeller", "rules")
            call_command("calibrate", "demo-machine", "--sample", "120")
            call_command("simulate_annotations", "demo-machine-part-1")

        for _ in range(3):  # a sync escalates disputed sample queries: the team answers the new places
            if not plan_routing(Batch.objects.get(name="demo-machine"), 0.95).awaiting_votes:
                break
            call_command("simulate_annotations", "demo-machine-part-1")
        call_command("calibration", "demo-machine")
        if not Batch.objects.filter(name="demo-machine").get().routings.exists():
            call_command("route", "demo-machine", "--target-accuracy", "0.95", "--yes")
            routed = Batch.objects.get(name="demo-machine").routings.get().routed_batch
            if routed is not None:
                call_command("simulate_annotations", routed.name)

        self.step("Export and measure")
        if not QuerySet.objects.filter(name="demo-non-gendered").exists():
            call_command(
                "export_queries", "demo-batch", "--category", "non-gendered",
                "--out", str(out / "non-gendered.tsv"), "--as", "demo-non-gendered",
            )  # fmt: skip
        call_command(
            "bias_report", "--queries", "demo-non-gendered", "--runs", ",".join(RUNS),  # the default cutoffs
            "--qrels", QRELS, "--out", str(out / "bias.csv"), "--plot", str(out / "bias.png"),
        )  # fmt: skip

        report = Report.objects.filter(query_set__name="demo-non-gendered").order_by("-created", "-pk").first()
        self.step(
            f"Effectiveness beside bias at rank {SUMMARY_CUTOFF} (report {report.name!r}; "
            "effectiveness: higher is better; ARaB: 0 is unbiased, > 0 leans male; NFaiRR, TExFAIR: 1 is fair)"
        )
        self.stdout.write(summary_table(report_summary(report)))

        a, b = most_different(report_summary(report), PLAN_METRIC, "tf", SUMMARY_CUTOFF)
        delta = plan_delta(report_summary(report), a, b)
        self.step(
            f"A study plan for the two most different rankers on {PLAN_METRIC}@{SUMMARY_CUTOFF}, {a} and {b}: "
            f"how many queries to detect a difference of {delta:g} with 80% power, and what annotating them costs"
        )
        call_command(
            "plan_study", "--report", report.name, "--runs", f"{a},{b}", "--metric", PLAN_METRIC,
            "--cutoff", str(SUMMARY_CUTOFF), "--delta", f"{delta:g}", "--pool", "demo-pool", "-v", "0",
            stdout=self.stdout,
        )  # fmt: skip

        self.step(
            "The same runs on the machine-labelled batch's labels, with their uncertainty "
            "(crowd posteriors, rulings, machine labels at their calibrated accuracy)"
        )
        if not Report.objects.filter(name=LABELS_REPORT).exists():
            call_command(
                "bias_report", "--from-batch", "demo-machine", "--runs", ",".join(RUNS), "--baseline", RUNS[0],
                "--cutoffs", "10", "--name", LABELS_REPORT, "--out", str(out / "bias-with-labels.csv"),
                stdout=self.stdout,
            )  # fmt: skip
        else:
            self.stdout.write(f"Report {LABELS_REPORT!r} is already built; see /metrics/{LABELS_REPORT}/")

        self.step("Publishing: the labelled queries as a Hugging Face-ready dataset folder with Croissant metadata")
        call_command(
            "publish_dataset", "demo-batch", "--out", str(out / "dataset"), "--license", "cc-by-4.0",
            stdout=self.stdout,
        )  # fmt: skip
        self.step("Publishing: the paper bundle (LaTeX tables, figures, methods, references)")
        call_command("paper", report.name, "--out", str(out / "paper"), stdout=self.stdout)

        if make_user:
            user_model.objects.create_superuser("demo", "demo@example.org", "demo")
        if no_demo_user:
            self.stdout.write(self.style.SUCCESS(f"Done. Files are in {out} (no demo account made)."))
        else:
            self.stdout.write(self.style.SUCCESS(f"Done. Files are in {out}; log in to the site as demo / demo."))
