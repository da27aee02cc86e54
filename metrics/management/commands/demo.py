"""The whole researcher's path on synthetic data, on the embedded default (``bin/demo``).

It drives every app (pooling -> annotation -> metrics), so it lives in the app on top:
imports flow downwards, and ``core`` imports no app.
"""

from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command

from core.cli import ProjectCommand
from pooling.models import Collection, Pool, QuerySet, Run
from pooling.synthetic import SyntheticSpec, write_collection, write_queries, write_runs

RUNS = ("ranker-a", "ranker-b", "ranker-c")


class Command(ProjectCommand):
    help = (
        "Run the whole path on a small synthetic collection: import, pool, annotate with simulated "
        "in-house annotators, review agreement, export the non-gendered queries and measure the "
        "runs' bias on them. Safe to run again: finished steps are skipped. Creates the user demo/demo."
    )

    def add_arguments(self, parser):
        parser.add_argument("--passages", type=int, default=20_000, help="synthetic collection size (default 20,000)")
        parser.add_argument("--queries", type=int, default=600, help="synthetic queries (default 600)")

    def step(self, title: str) -> None:
        self.stdout.write(self.style.MIGRATE_HEADING(f"==> {title}"))

    def handle(self, passages, queries, **options):
        out = Path(settings.VAR_DIR) / "demo"
        out.mkdir(parents=True, exist_ok=True)
        spec = SyntheticSpec(passages=passages, queries=queries, runs=len(RUNS), depth=50)
        if not (out / "collection.tsv").exists():
            self.step(
                f"Writing a synthetic collection ({passages:,} passages), {queries:,} queries and {len(RUNS)} runs to {out}"
            )
            write_collection(out / "collection.tsv", spec)
            write_queries(out / "queries.tsv", spec)
            for path, name in zip(write_runs(out, out / "queries.tsv", spec), RUNS, strict=True):
                path.rename(out / f"{name}.trec")

        self.step("Pooling")
        if not Collection.objects.filter(name="demo").exists():
            call_command("import_collection", str(out / "collection.tsv"), "--name", "demo")
        if not QuerySet.objects.filter(name="demo-queries").exists():
            call_command("import_queries", str(out / "queries.tsv"), "--name", "demo-queries")
        for name in RUNS:
            if not Run.objects.filter(name=name).exists():
                call_command("import_run", str(out / f"{name}.trec"), "--name", name, "--collection", "demo")
        if not Pool.objects.filter(name="demo-pool").exists():
            call_command(
                "pool", "--name", "demo-pool", "--queries", "demo-queries", "--runs", ",".join(RUNS),
                "--rank-cutoff", "10", "--depth", "100", "--out", str(out / "pool.tsv"),
            )  # fmt: skip

        self.step("Annotation with simulated in-house annotators")
        from annotation.models import Batch

        if not Batch.objects.filter(name="demo-batch").exists():
            call_command(
                "create_batch", "--name", "demo-batch", "--pool", "demo-pool", "--provider", "local",
                "--assignments", "3", "--queries-per-hit", "10", "--reward", "0.05",
            )  # fmt: skip
            call_command("publish_batch", "demo-batch")
            call_command("simulate_annotations", "demo-batch")

        self.step("Agreement")
        call_command("agreement", "demo-batch")

        self.step("Export and measure")
        if not QuerySet.objects.filter(name="demo-non-gendered").exists():
            call_command(
                "export_queries", "demo-batch", "--category", "non-gendered",
                "--out", str(out / "non-gendered.tsv"), "--as", "demo-non-gendered",
            )  # fmt: skip
        call_command(
            "bias_report", "--queries", "demo-non-gendered", "--runs", ",".join(RUNS), "--cutoffs", "5,10,20,30",
            "--out", str(out / "bias.csv"), "--plot", str(out / "bias.png"),
        )  # fmt: skip

        user_model = get_user_model()
        if not user_model.objects.filter(username="demo").exists():
            user_model.objects.create_superuser("demo", "demo@example.org", "demo")
        self.stdout.write(self.style.SUCCESS(f"Done. Files are in {out}; log in to the site as demo / demo."))
