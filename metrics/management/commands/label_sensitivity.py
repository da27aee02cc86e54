from django.core.management.base import BaseCommand, CommandError

from core.cli import command_errors
from core.files import atomic_path, atomic_write, check_writable
from metrics import plots, sensitivity, services
from metrics.core import COLLECTION_BACKGROUND, DEFAULT_NORMALISER, NORMALISERS
from pooling.models import Run
from pooling.tokenize import DEFAULT_TOKENIZER, TOKENIZERS
from pooling.wordlists import load_wordlist


class Command(BaseCommand):
    help = (
        "How labelling choices move the bias results: for each aggregation (majority, Dawid-Skene "
        "seeded with gold, Wawa) x each policy for disputed queries (drop, aggregation, adjudicated, "
        "confident), build the batch's non-gendered query set and measure RaB/ARaB (tf, bool), NFaiRR "
        "and TExFAIR of every run with bootstrap CIs; then say, per metric and cutoff, whether the "
        "ranking of the runs changes against majority/drop (Kendall's tau) and which pairs swap."
    )

    def add_arguments(self, parser):
        parser.add_argument("batch", help="name of the annotation batch")
        parser.add_argument("--runs", required=True, help="comma-separated run names")
        parser.add_argument("--cutoffs", default="5,10,20", help="comma-separated rank cutoffs (default 5,10,20)")
        parser.add_argument(
            "--out",
            required=True,
            help="CSV: aggregation,disputed,run,metric,variant,cutoff,value,ci_low,ci_high,n_queries",
        )
        parser.add_argument("--rankings", help="also write the ranking changes as CSV (tau and swapped pairs)")
        parser.add_argument("--plot", help="PNG of every configuration at --plot-cutoff (default: the largest)")
        parser.add_argument("--plot-cutoff", type=int, help="cutoff of the plot")
        parser.add_argument(
            "--threshold",
            type=float,
            default=sensitivity.DEFAULT_THRESHOLD,
            help="'confident' keeps labels whose confidence (vote share, posterior, Wawa weight share) "
            f"is at least this (default {sensitivity.DEFAULT_THRESHOLD})",
        )
        parser.add_argument("--wordlist", help="'word,f|m' file for RaB/ARaB (default: the 32+32 definitional words)")
        parser.add_argument("--representative-wordlist", help="'word,f|m' file for NFaiRR/TExFAIR")
        parser.add_argument("--tokenizer", choices=TOKENIZERS, default=DEFAULT_TOKENIZER)
        parser.add_argument("--nfairr-threshold", type=float, default=1, help="NFaiRR's tau (default 1)")
        parser.add_argument(
            "--background", default=COLLECTION_BACKGROUND, help="NFaiRR's background: 'collection' or a run"
        )
        parser.add_argument("--nfairr-normaliser", choices=NORMALISERS, default=DEFAULT_NORMALISER)
        parser.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples (default 1000)")
        parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")

    def handle(self, **o):
        from annotation.management.commands._common import get_batch

        batch = get_batch(o["batch"])
        names = list(dict.fromkeys(n.strip() for n in o["runs"].split(",") if n.strip()))
        if not names:
            raise CommandError("give at least one run with --runs")
        wanted = [*names, *([o["background"]] if o["background"] != COLLECTION_BACKGROUND else [])]
        runs = {r.name: r for r in Run.objects.filter(name__in=wanted).select_related("collection")}
        unknown = [n for n in dict.fromkeys(wanted) if n not in runs]
        if unknown:
            raise CommandError(f"unknown run(s): {', '.join(unknown)}")
        with command_errors():
            for option in ("out", "rankings", "plot"):
                if o[option]:
                    check_writable(o[option])
            cutoffs = services.parse_cutoffs(o["cutoffs"])
            if o["plot_cutoff"] is not None and o["plot_cutoff"] not in cutoffs:
                raise CommandError(f"--plot-cutoff {o['plot_cutoff']} is not one of --cutoffs {o['cutoffs']}")
            report_settings = services.ReportSettings(
                cutoffs, o["tokenizer"], o["nfairr_threshold"], o["bootstrap"], o["seed"], o["nfairr_normaliser"]
            )
            result = services.label_sensitivity(
                batch,
                [runs[n] for n in names],
                report_settings,
                threshold=o["threshold"],
                wordlist=load_wordlist(o["wordlist"]) if o["wordlist"] else None,
                representative=load_wordlist(o["representative_wordlist"]) if o["representative_wordlist"] else None,
                background=runs.get(o["background"]),
                bar=o["verbosity"] > 0,
            )
            atomic_write(o["out"], lambda f: f.write(services.sensitivity_csv(result.table)), newline="")
            if o["rankings"]:
                atomic_write(o["rankings"], lambda f: f.write(services.rankings_csv(result.rankings)), newline="")
            if o["plot"]:
                with atomic_path(o["plot"]) as tmp:
                    tmp.write_bytes(plots.sensitivity_figure(result.table, o["plot_cutoff"] or max(cutoffs)))
        self.stdout.write(services.rankings_text(result))
        self.stdout.write(self.style.SUCCESS(f"Wrote {len(result.table)} rows to {o['out']}"))
        if o["rankings"]:
            self.stdout.write(f"Wrote the ranking changes to {o['rankings']}")
        if o["plot"]:
            self.stdout.write(f"Wrote the plot to {o['plot']}")
