import time

import numpy as np
import pandas as pd
from django.core.management.base import CommandError

from core.management.cli import ProjectCommand
from genderbias.crowd.simulation import coverage
from genderbias.crowd.simulation import studies as cs


class Command(ProjectCommand):
    help = (
        "Coverage of the label-based intervals on simulated studies with a realistic crowd "
        "(genderbias/crowd/simulation/studies.py): the label-corrected value and paired difference of a report on a "
        "batch's labels and the machine's de-noised accuracy, each against its known truth, and the share of "
        "studies with the crowd-quality warning; prints the share covered with its Monte-Carlo standard error. "
        "--dependence makes the workers' errors depend on run A's values (the case no label model corrects): "
        "how far coverage falls if labelling errors depend on the rankings by that much. Every interval "
        "construction of genderbias.stats.intervals (percentile, basic, normal, BC, BCa, and the crossed ones that add the "
        "workers' variance from jackknives over the workers and the answers) is computed from the same draws of "
        "each study, so the table compares them paired; the product's (genderbias.stats.intervals.LABEL_INTERVAL) is the "
        "unsuffixed row, and the crossed ones' mean widening over the bootstrap interval is printed; each study is also "
        "the pilot of a study plan, whose promised power is set against the power delivered. --out writes one line per study as it finishes (a long run can be read part-way)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--queries", type=int, default=1000)
        parser.add_argument("--studies", type=int, default=100)
        parser.add_argument("--samples", type=int, default=200, help="bootstrap resamples per study (default 200)")
        parser.add_argument(
            "--crowd",
            choices=(*cs.CROWDS, *cs.SIZED),
            default="moderate",
            help="genderbias/crowd/simulation/studies.py: CROWDS, or SIZED (sized to --queries); issue 66's kinds: KINDS",
        )
        parser.add_argument(
            "--dependence",
            type=float,
            default=0.0,
            help="error odds × exp(dependence · z), z = run A's standardised value",
        )
        parser.add_argument("--seed", type=int, default=2040)
        parser.add_argument(
            "--product-only",
            action="store_true",
            help="only the product's interval (genderbias.stats.intervals.LABEL_INTERVAL), not every construction: faster",
        )
        parser.add_argument("--first", type=int, default=0, help="index of the first study (seeds [seed, s])")
        parser.add_argument("--out", help="CSV file: one row per study, appended as each finishes")
        parser.add_argument("--read", help="only print the tables of an --out file (no new studies)")

    def handle(self, **o):
        crowd = cs.with_dependence(cs.crowd_named(o["crowd"], o["queries"]), o["dependence"])
        started = time.perf_counter()
        if o["read"]:
            try:
                results = pd.read_csv(o["read"])
            except (OSError, ValueError) as exc:
                raise CommandError(f"--read {o['read']}: {exc}") from None
            missing = [c for c in ("study", "value", "difference", "denoised", "warning") if c not in results.columns]
            if missing:
                raise CommandError(
                    f"--read {o['read']}, line 1: not a crowd_coverage --out file (no column {', '.join(missing)})"
                )
        else:
            rows = []
            for s in range(o["first"], o["first"] + o["studies"]):
                try:
                    row = {"study": s} | coverage.coverage_study(
                        np.random.default_rng([o["seed"], s]),
                        crowd,
                        o["queries"],
                        s,
                        o["samples"],
                        constructions=not o["product_only"],
                    )
                except RuntimeError as exc:  # a crowd whose simulator is not installed (peerannot)
                    raise CommandError(f"--crowd {o['crowd']}: {exc}") from None
                rows.append(row)
                if o["out"]:
                    pd.DataFrame([row]).to_csv(o["out"], mode="a", header=len(rows) == 1 and o["first"] == 0,
                                               index=False)  # fmt: skip
            results = pd.DataFrame(rows)
        seconds = time.perf_counter() - started
        self.stdout.write(
            f"{o['crowd']} crowd, dependence {o['dependence']}, {o['queries']:,} queries, {len(results)} studies, "
            f"{o['samples']} resamples each, nominal 0.95 ({seconds:.0f} s)"
        )
        self.stdout.write(f"{'':<32}{'share':>8}{'MC s.e.':>9}")
        for name, row in coverage.coverage_table(results).iterrows():
            self.stdout.write(f"{name:<32}{row['share']:>8.3f}{row['mc_se']:>9.3f}")
        widths = coverage.width_table(results)
        if len(widths):
            self.stdout.write(
                "against the oracle (true labels, same bootstrap): coverage, oracle's, median width ratio; the"
                " ratio an interval needs (the estimate's own error); power to find the planted difference, oracle's"
            )
            for name, row in widths.iterrows():
                needed = row.get("needed_ratio", np.nan)
                tail = f"{'' if np.isnan(needed) else f'{needed:.2f}':>8}"
                tail += f"{row['power']:>8.3f}{row['oracle_power']:>8.3f}" if name == "difference" else ""
                self.stdout.write(f"{name:<32}{row['coverage']:>8.3f}{row['oracle_coverage']:>8.3f}"
                                  f"{row['width_ratio']:>8.2f}{tail}")  # fmt: skip
            promised = widths.loc["difference"] if "promised" in widths.columns else None
            if promised is not None:
                self.stdout.write(
                    "the study plan's power, each study its own pilot (metrics.services.planning), against the power "
                    f"delivered ({promised['power']:.3f}): delivered − promised (paired MC s.e.)"
                )
                for name, what in (
                    ("promised", "at Δ/r, the report's test"),
                    ("promised_query_only", "at Δ, labels as known"),
                ):
                    self.stdout.write(
                        f"  {what:<30}{promised[name]:>8.3f}{promised[f'{name}_gap']:>+9.3f} "
                        f"({promised[f'{name}_gap_se']:.3f})"
                    )
        bias = coverage.bias_table(results)
        if len(bias):
            self.stdout.write("in bootstrap s.d.: estimate − truth, mean draw − estimate (MC s.e.), s.d. of the error")
            for name, row in bias.iterrows():
                self.stdout.write(
                    f"{name:<12}{row['error']:>+8.3f} ({row['error_se']:.3f}){row['shift']:>+8.3f} "
                    f"({row['shift_se']:.3f}){row['spread']:>8.3f}"
                )
            widened = [c for c in bias.columns if c.startswith("widening_")]
            if widened:
                self.stdout.write("mean width over the bootstrap interval's: " + ", ".join(widened))
                for name, row in bias.iterrows():
                    self.stdout.write(f"{name:<12}" + "".join(f"{row[c]:>8.3f}" for c in widened))
