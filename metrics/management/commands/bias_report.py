from django.core.management.base import CommandError

from annotation import selectors as annotation_selectors
from core.management.cli import (
    ProjectCommand,
    add_option,
    command_errors,
    get_named,
    get_named_list,
    name_list,
    whole_number,
)
from core.options import REPORT_OPTIONS
from genderbias.files.atomic import atomic_path, atomic_write, check_writable
from genderbias.presets import PRESETS
from genderbias.ranking.defaults import COLLECTION_BACKGROUND, TABLE_LAYOUTS
from genderbias.text.wordlists import load_wordlist
from pooling.models import Qrels, QuerySet, Run


class Command(ProjectCommand):
    help = (
        "Measure the gender bias of runs over a query set: RaB and ARaB (TF and Boolean magnitudes, "
        "definitional word list), NFaiRR, TExFAIR and the exposure metrics AWRF, rKL, rND, rRD "
        "(representative word list) at every cutoff. "
        "A model's value is the mean over the query-set queries its run contains. Stores a report "
        "(see /metrics/) and prints a table like Table 3 of Rekabsaz & Schedl (SIGIR 2020). "
        "With --from-batch BATCH instead of --queries, the query set is the batch's non-gendered "
        "queries and every interval also carries the labels' uncertainty (docs/metrics.md)."
    )

    def add_arguments(self, parser):
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--queries", help="name of the query set")
        source.add_argument(
            "--from-batch",
            metavar="BATCH",
            help="report on an annotation batch's labels: its non-gendered queries (stored as the query set "
            "<name>-non-gendered), with label-corrected values and intervals that carry the labels' uncertainty "
            "(crowd posteriors, rulings, calibrated machine labels)",
        )
        parser.add_argument("--runs", required=True, help="comma-separated run names")
        for option in REPORT_OPTIONS.values():  # the report's settings, declared once (core.options)
            add_option(parser, option)
        parser.add_argument(
            "--background",
            default=COLLECTION_BACKGROUND,
            help="NFaiRR's ideal ranking: 'collection' (default) or the name of a background run",
        )
        parser.add_argument(
            "--baseline",
            help="run to test the others against (two-sided paired t-test; family: every run against the baseline "
            "for one metric, variant and cutoff; Holm-adjusted p)",
        )
        parser.add_argument(
            "--qrels",
            help="name of imported relevance judgments (manage.py import_qrels): adds effectiveness measures, "
            "computed with ir_measures",
        )
        parser.add_argument(
            "--measures",
            help="with --qrels: comma-separated ir_measures names with a cutoff, of RR (or MRR), nDCG, R, P, AP "
            "(default RR@10,nDCG@10,R@10,P@10)",
        )
        parser.add_argument("--name", help="name of the stored report (default: derived from the query set and runs)")
        parser.add_argument("--out", help="write the results as CSV: run,metric,variant,cutoff,value,queries")
        parser.add_argument(
            "--per-query",
            help="write per-query values as CSV: run,qid,metric,variant,cutoff,value,mean,ci_low,ci_high,p_value,"
            "significance",
        )
        parser.add_argument("--plot", help="write a PNG of every metric against the cutoff")
        parser.add_argument(
            "--table",
            choices=TABLE_LAYOUTS,
            help="also print a paper's table: ecir2024 (MRR, nDCG, NFaiRR, TExFAIR, r and tau between TExFAIR "
            "and NFaiRR per run), sigir2020 (MRR, Recall, RaB/ARaB tf and bool per cutoff) or exposure (nDCG, "
            "NFaiRR, TExFAIR, AWRF, rKL, rND, rRD, r and tau between AWRF and NFaiRR per run)",
        )
        parser.add_argument(
            "--table-cutoff", type=whole_number, help="the table's cutoff (default 10 when computed, else the largest)"
        )
        parser.add_argument(
            "--correlate", help="with --table: the two metrics to correlate per run, e.g. TExFAIR:plain,NFaiRR@20"
        )

    def handle(self, **o):
        # Here, not at the top: the report's machinery and pandas, which --help need not load (matplotlib only
        # with --plot, below).
        from metrics import formatting, selectors, services

        query_set = get_named(QuerySet, o["queries"], "query set") if o["queries"] else None
        batch = None
        if o["from_batch"]:
            batch = get_named(annotation_selectors.batches(), o["from_batch"], "batch")
        names = name_list(o["runs"])
        if not names:
            raise CommandError("give at least one run with --runs")
        wanted = [*names, *([o["baseline"]] if o["baseline"] else [])]
        if o["background"] != COLLECTION_BACKGROUND:
            wanted.append(o["background"])
        runs = {run.name: run for run in get_named_list(Run, wanted, "run")}
        qrels = get_named(Qrels, o["qrels"], "qrels") if o["qrels"] else None
        if o["measures"] and qrels is None:
            raise CommandError("--measures needs --qrels (the relevance judgments to measure against)")
        with command_errors():
            for option in ("out", "per_query", "plot"):  # before the work, not after it
                if o[option]:
                    check_writable(o[option])
            chosen = {option.setting: o[option.name] for option in REPORT_OPTIONS.values() if option.kind != "file"}
            chosen |= {
                "cutoffs": services.parse_cutoffs(o["cutoffs"]),  # text or a value: CUTOFFS_OPTION's one check
                "preset": o["preset"] or "",
                "measures": services.parse_measures(o["measures"] or ""),
            }
            report_settings = services.ReportSettings(**chosen)
            report_settings.validate()
            words = load_wordlist(o["wordlist"]) if o["wordlist"] else None
            representative = load_wordlist(o["representative_wordlist"]) if o["representative_wordlist"] else None
            name = o["name"] or selectors.default_report_name(query_set or batch, names)
            build = services.build_report if batch is None else services.build_batch_report
            report = build(
                name,
                query_set or batch,
                [runs[n] for n in names],
                report_settings,
                wordlist=words,
                representative=representative,
                background=runs.get(o["background"]),
                baseline=runs.get(o["baseline"]) if o["baseline"] else None,
                qrels=qrels,
                bar=o["verbosity"] > 0,
            )
        summary = selectors.report_summary(report)
        self.stdout.write(formatting.wrap(report.ties_statement) + "\n")
        for line in formatting.tie_lines(report.tied_queries, summary):
            self.stdout.write(line + "\n")
        self.stdout.write(f"NFaiRR normalised {report.nfairr_normalisation}.\n")
        self.stdout.write(
            formatting.wrap(f"Exposure metrics: {report.exposure_settings}.\n{report.exposure_definition}") + "\n"
        )
        self.stdout.write(formatting.terminal_table(summary))
        if report.qrels_id:
            self.stdout.write("\n" + formatting.wrap(formatting.unjudged_note(report.qrels.name, report.unjudged)))
            self.stdout.write(f"\n{formatting.unreturned_note(report.unreturned)}")
        if report.on_batch:
            cutoff = o["table_cutoff"] or (10 if 10 in report.cutoffs else max(report.cutoffs))
            self.stdout.write(
                f"\nWith the labels' uncertainty ({len(report.query_set.queries.all())} non-gendered queries "
                f"of batch {batch.name}; corrected = mean over the truly non-gendered queries, estimated "
                "from every judged query's label probabilities):\n"
            )
            kind = (report.label_interval or {}).get("kind")
            self.stdout.write(formatting.uncertainty_table(summary, cutoff, kind=kind))
            if report.interval_sentence:
                self.stdout.write("\n" + formatting.wrap(f"Label-corrected intervals: {report.interval_sentence}."))
            quality_note = formatting.crowd_quality_note(report.figure_quality)
            if quality_note:
                self.stdout.write("\n" + quality_note)
        if report.baseline_id:
            self.stdout.write("\n" + formatting.wrap(selectors.report_policy_text(report)))
        layout = o["table"] or (PRESETS[report.preset].table if report.preset else "")
        if layout:
            from metrics import tables

            with command_errors():
                table = selectors.report_table(report, layout, cutoff=o["table_cutoff"], correlate=o["correlate"])
            self.stdout.write("\n" + tables.table_text(table))
        self.stdout.write(self.style.SUCCESS(f"\nReport {report.name!r} stored; see /metrics/{report.name}/"))
        with command_errors():
            if o["out"]:
                atomic_write(
                    o["out"],
                    lambda f: f.write(
                        formatting.results_csv(summary, report.ties, report.figure_quality, report.interval_sentence)
                    ),
                    newline="",
                )
                self.stdout.write(f"Wrote results to {o['out']}")
            if o["per_query"]:
                per_query = selectors.report_per_query_export(report)
                policy = selectors.report_policy_text(report)
                atomic_write(
                    o["per_query"], lambda f: formatting.write_per_query_csv(f, per_query, summary, policy), newline=""
                )
                self.stdout.write(f"Wrote per-query values to {o['per_query']}")
            if o["plot"]:
                from metrics import plots

                with atomic_path(o["plot"]) as tmp:
                    tmp.write_bytes(plots.cutoff_figure(summary))
                self.stdout.write(f"Wrote the plot to {o['plot']}")
