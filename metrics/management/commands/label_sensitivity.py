from django.core.management.base import CommandError

from annotation import selectors as annotation_selectors
from core.management.cli import (
    ProjectCommand,
    add_option,
    command_errors,
    decimal_number,
    get_named,
    get_named_list,
    name_list,
    whole_number,
)
from core.options import (
    BOOTSTRAP_OPTION,
    NORMALISER_OPTION,
    REPRESENTATIVE_WORDLIST_OPTION,
    SEED_OPTION,
    SENSITIVITY_CUTOFFS_OPTION,
    THRESHOLD_OPTION,
    TIES_OPTION,
    TOKENIZER_OPTION,
    WORDLIST_OPTION,
)
from genderbias.files.atomic import atomic_path, atomic_write, check_writable
from genderbias.ranking.defaults import CONFIDENCE_THRESHOLD
from genderbias.text.wordlists import load_wordlist
from metrics import services
from metrics.models import COLLECTION_BACKGROUND
from pooling.models import Run


class Command(ProjectCommand):
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
        add_option(parser, SENSITIVITY_CUTOFFS_OPTION)
        parser.add_argument(
            "--out",
            required=True,
            help="CSV: aggregation,disputed,run,metric,variant,cutoff,value,ci_low,ci_high,n_queries",
        )
        parser.add_argument("--rankings", help="also write the ranking changes as CSV (tau and swapped pairs)")
        parser.add_argument("--plot", help="PNG of every configuration at --plot-cutoff (default: the largest)")
        parser.add_argument("--plot-cutoff", type=whole_number, help="cutoff of the plot")
        parser.add_argument(
            "--threshold",
            type=decimal_number,
            default=CONFIDENCE_THRESHOLD,
            help="'confident' keeps labels whose confidence (vote share, posterior, Wawa weight share) "
            f"is at least this (default {CONFIDENCE_THRESHOLD})",
        )
        for option in (WORDLIST_OPTION, REPRESENTATIVE_WORDLIST_OPTION, TOKENIZER_OPTION):
            add_option(parser, option)
        # --threshold is the 'confident' policy's here: NFaiRR's τ takes its declaration under another flag.
        add_option(parser, THRESHOLD_OPTION, "--nfairr-threshold")
        parser.add_argument(
            "--background", default=COLLECTION_BACKGROUND, help="NFaiRR's background: 'collection' or a run"
        )
        for option in (NORMALISER_OPTION, BOOTSTRAP_OPTION, SEED_OPTION, TIES_OPTION):
            add_option(parser, option)
        parser.add_argument(
            "--dependence",
            help="comma-separated D values, e.g. 0,0.5,1: also how far each label-corrected difference against "
            "--baseline and its interval move if the odds of a wrong label grow by exp(D*z) with the baseline's "
            "standardised value z (D > 0: labels less trustworthy where the baseline's value is high)",
        )
        parser.add_argument("--baseline", help="run the differences are taken against (default: the first of --runs)")
        parser.add_argument("--dependence-out", help="also write the dependence table as CSV")

    def handle(self, **o):
        from metrics import formatting, study_figures

        batch = get_named(annotation_selectors.batches(), o["batch"], "batch")
        names = name_list(o["runs"])
        if not names:
            raise CommandError("give at least one run with --runs")
        with command_errors():
            dependence = services.parse_dependences(o["dependence"]) if o["dependence"] else ()
        if o["baseline"] and o["baseline"] not in names:
            raise CommandError(f"--baseline {o['baseline']} is not one of --runs {o['runs']}")
        if (o["baseline"] or o["dependence_out"]) and not dependence:
            raise CommandError("--baseline and --dependence-out go with --dependence")
        wanted = [*names, *([o["background"]] if o["background"] != COLLECTION_BACKGROUND else [])]
        runs = {run.name: run for run in get_named_list(Run, wanted, "run")}
        with command_errors():
            for option in ("out", "rankings", "plot", "dependence_out"):
                if o[option]:
                    check_writable(o[option])
            cutoffs = services.parse_cutoffs(o["cutoffs"], SENSITIVITY_CUTOFFS_OPTION)
            if o["plot_cutoff"] is not None and o["plot_cutoff"] not in cutoffs:
                shown = ",".join(map(str, cutoffs))
                raise CommandError(f"--plot-cutoff {o['plot_cutoff']} is not one of --cutoffs {shown}")
            report_settings = services.ReportSettings(
                cutoffs,
                o["tokenizer"],
                o["nfairr_threshold"],
                o["bootstrap"],
                o["seed"],
                o["nfairr_normaliser"],
                ties=o["ties"],
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
                dependence=dependence,
                baseline=runs[o["baseline"]] if o["baseline"] else None,
            )
            atomic_write(o["out"], lambda f: f.write(formatting.sensitivity_csv(result.table)), newline="")
            if o["rankings"]:
                atomic_write(o["rankings"], lambda f: f.write(formatting.rankings_csv(result.rankings)), newline="")
            if o["dependence_out"]:
                atomic_write(
                    o["dependence_out"], lambda f: f.write(formatting.dependence_csv(result.dependence)), newline=""
                )
            if o["plot"]:
                with atomic_path(o["plot"]) as tmp:
                    tmp.write_bytes(study_figures.sensitivity_figure(result.table, o["plot_cutoff"] or max(cutoffs)))
        self.stdout.write(formatting.rankings_text(result))
        if result.dependence is not None:
            self.stdout.write(formatting.dependence_text(result))
        self.stdout.write(self.style.SUCCESS(f"Wrote {len(result.table)} rows to {o['out']}"))
        if o["rankings"]:
            self.stdout.write(f"Wrote the ranking changes to {o['rankings']}")
        if o["plot"]:
            self.stdout.write(f"Wrote the plot to {o['plot']}")
