from core.management.cli import ProjectCommand


class Command(ProjectCommand):
    help = (
        "Coverage of the label-based intervals on simulated studies with a realistic crowd "
        "(benchmarks/crowd_simulation.py): the label-corrected value and paired difference of a report on a "
        "batch's labels and the machine's de-noised accuracy, each against its known truth, and the share of "
        "studies with the crowd-quality warning; prints the share covered with its Monte-Carlo standard error. "
        "--dependence makes the workers' errors depend on run A's values (the case no label model corrects): "
        "how far coverage falls if labelling errors depend on the rankings by that much."
    )

    def add_arguments(self, parser):
        parser.add_argument("--queries", type=int, default=1000)
        parser.add_argument("--studies", type=int, default=100)
        parser.add_argument("--samples", type=int, default=200, help="bootstrap resamples per study (default 200)")
        parser.add_argument("--crowd", choices=("moderate", "heavy"), default="moderate")
        parser.add_argument(
            "--dependence",
            type=float,
            default=0.0,
            help="error odds × exp(dependence · z), z = run A's standardised value",
        )
        parser.add_argument("--seed", type=int, default=2040)

    def handle(self, **o):
        import time

        import numpy as np
        import pandas as pd

        from benchmarks import crowd_simulation as cs

        crowd = cs.with_dependence(cs.MODERATE if o["crowd"] == "moderate" else cs.HEAVY, o["dependence"])
        started = time.perf_counter()
        results = pd.DataFrame(
            [
                cs.coverage_study(np.random.default_rng([o["seed"], s]), crowd, o["queries"], s, o["samples"])
                for s in range(o["studies"])
            ]
        )
        seconds = time.perf_counter() - started
        self.stdout.write(
            f"{o['crowd']} crowd, dependence {o['dependence']}, {o['queries']:,} queries, {o['studies']} studies, "
            f"{o['samples']} resamples each, nominal 0.95 ({seconds:.0f} s)"
        )
        self.stdout.write(f"{'':<12}{'share':>8}{'MC s.e.':>9}")
        for name, row in cs.coverage_table(results).iterrows():
            self.stdout.write(f"{name:<12}{row['share']:>8.3f}{row['mc_se']:>9.3f}")
