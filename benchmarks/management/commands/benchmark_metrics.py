import subprocess

from django.core.management.base import CommandError

from benchmarks.measure import run_module
from core.management.cli import ProjectCommand

MODES = {
    "notebook": "the notebook's algorithm, RaB+ARaB (tf, bool)",
    "naive": "lean Python loop, RaB+ARaB (tf, bool)",
    "vector": "vectorised core, RaB+ARaB (tf, bool)",
    "full": "vectorised, all metrics + bootstrap CIs",
}


class Command(ProjectCommand):
    help = (
        "Benchmark the metrics on synthetic runs and counts: the reference notebooks' Python loops "
        "against the vectorised core for RaB and ARaB (TF and Boolean) at 5/10/20/30, and the whole set "
        "of metrics (RaB, ARaB, NFaiRR, TExFAIR, bootstrap CIs). Each mode runs in a fresh process; "
        "prints seconds and peak memory side by side and checks that both give identical numbers."
    )

    def add_arguments(self, parser):
        parser.add_argument("--queries", type=int, default=7000)
        parser.add_argument("--docs", type=int, default=1000, help="documents per query in each run (default 1000)")
        parser.add_argument("--runs", type=int, default=7)
        parser.add_argument("--collection", type=int, default=1_000_000, help="documents in the synthetic collection")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument(
            "--skip-naive", action="store_true", help="time only the vectorised modes (the notebook mode takes minutes)"
        )

    def handle(self, **o):
        args = [str(o[k]) for k in ("queries", "docs", "runs", "collection", "seed")]
        self.stdout.write(
            f"{o['runs']} runs x {o['queries']:,} queries x {o['docs']:,} documents; "
            f"collection of {o['collection']:,} documents; cutoffs 5, 10, 20, 30"
        )
        outcomes = {}
        for mode in MODES:
            if mode in ("notebook", "naive") and o["skip_naive"]:
                continue
            try:
                outcomes[mode] = run_module("benchmarks.metrics", mode, *args)
            except subprocess.CalledProcessError as exc:
                raise CommandError(f"{mode} failed:\n{exc.stderr[-2000:]}") from None
        self.stdout.write(f"\n{'mode':<10}{'what':<48}{'seconds':>10}{'peak MB':>10}{'setup s':>10}")
        for mode, out in outcomes.items():
            self.stdout.write(
                f"{mode:<10}{MODES[mode]:<48}{out['seconds']:>10.2f}{out['peak_mb']:>10.0f}{out['setup']:>10.1f}"
            )
        if "naive" in outcomes:
            naive, vector = outcomes["naive"]["results"], outcomes["vector"]["results"]
            worst = max(abs(naive[k] - vector[k]) for k in naive)
            same = naive.keys() == vector.keys() and worst <= 1e-9
            full = outcomes["full"]["results"]
            same_full = all(abs(full[k] - v) <= 1e-9 for k, v in vector.items())
            speedup = outcomes["naive"]["seconds"] / max(outcomes["vector"]["seconds"], 1e-9)
            self.stdout.write(
                f"\nRaB/ARaB identical in all three modes: {same and same_full} "
                f"(largest difference {worst:.1e}); vectorised is {speedup:.0f}x faster"
            )
            if "notebook" in outcomes:
                book = outcomes["notebook"]["results"]
                worst_book = max(abs(book[k] - vector[k]) for k in book)
                same = same and worst_book <= 1e-9
                self.stdout.write(
                    f"the notebook's algorithm: largest difference {worst_book:.1e}; vectorised is "
                    f"{outcomes['notebook']['seconds'] / max(outcomes['vector']['seconds'], 1e-9):.0f}x faster"
                )
            if not (same and same_full):
                raise CommandError("the approaches disagree")
