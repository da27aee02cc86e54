"""Services of the metrics app: everything that measures, stores or starts a measurement.

Views, the API, forms, management commands and Celery tasks call these functions; they read
runs through :mod:`pooling.services` and the crowd through :mod:`annotation.selectors` only,
and leave the computing to the pure modules beside them (:mod:`genderbias.ranking.measures`,
:mod:`genderbias.stats.significance`, :mod:`genderbias.crowd.sensitivity`, :mod:`genderbias.ranking.rbo`,
:mod:`genderbias.stats.preference`, :mod:`genderbias.ranking.counterfactual`). One module per topic, named
so that it is never taken for the pure module it drives:

- :mod:`.reports` -- bias reports: settings, computing, storing (one transaction), starting as a job;
- :mod:`.labelling` -- label sensitivity: the runs' bias under every way of labelling a batch;
- :mod:`.crbo` -- CRBO of a run against its run on the counterfactual collection, as a job;
- :mod:`.variant_preference` -- which gendered version of each document a run prefers, as a job;
- :mod:`.counterfactual_collection` -- write and register a gender-swapped collection, as a job;
- :mod:`.set_comparison` -- the same runs on several query sets: each set's ranking and the agreement (τ), as a job;
- :mod:`.planning` -- a study plan: queries, pooled queries and cost to detect a difference (reads only);
- :mod:`.plot_cache` -- the report figures' files, drawn once (the pages' and the paper bundle's);
- :mod:`.per_query_file` -- a report's per-query CSV, written once by a job, then served as a file.

A report's paper bundle is the publishing app's (:mod:`publishing.services.paper`).

Everything is re-exported here: ``from metrics import services; services.build_report(...)``.
``LabelSensitivity``, the result type of :func:`label_sensitivity`, lives beside the pure
computation (:mod:`genderbias.crowd.sensitivity`, which loads numpy and pandas, so it is imported from there).
"""

from core.errors import ServiceError
from genderbias.text.wordlists import REPRESENTATIVE_WORDLIST, default_representative_wordlist

from .counterfactual_collection import (
    counterfactual_job,
    start_counterfactual_collection,
    write_counterfactual_collection,
)
from .crbo import crbo_job, crbo_summary, start_crbo
from .labelling import ask_label_sensitivity, label_sensitivity, label_sensitivity_job, parse_dependences
from .per_query_file import build_per_query_csv, cached_per_query_csv, per_query_csv_job, start_per_query_csv
from .planning import CostSettings, plan_study
from .plot_cache import cached_plot, plot_key, plot_path
from .report_settings import ReportInputs, ReportSettings, parse_cutoffs, parse_measures
from .reports import (
    Computed,
    build_batch_report,
    build_report,
    compute_batch_report,
    compute_report,
    per_query_values,
    report_job,
    start_rebuild,
    start_report,
)
from .set_comparison import (
    build_set_reports,
    check_comparison,
    check_set_building,
    compare_reports,
    compare_sets_job,
    start_compare_sets,
)
from .variant_preference import check_versioned_run, preference_job, preference_summary, start_preference

__all__ = [
    "REPRESENTATIVE_WORDLIST",
    "Computed",
    "CostSettings",
    "ReportInputs",
    "ReportSettings",
    "ServiceError",
    "ask_label_sensitivity",
    "build_batch_report",
    "build_per_query_csv",
    "build_report",
    "build_set_reports",
    "cached_per_query_csv",
    "cached_plot",
    "check_comparison",
    "check_set_building",
    "check_versioned_run",
    "compare_reports",
    "compare_sets_job",
    "compute_batch_report",
    "compute_report",
    "counterfactual_job",
    "crbo_job",
    "crbo_summary",
    "default_representative_wordlist",
    "label_sensitivity",
    "label_sensitivity_job",
    "parse_cutoffs",
    "parse_dependences",
    "parse_measures",
    "per_query_csv_job",
    "per_query_values",
    "plan_study",
    "plot_key",
    "plot_path",
    "preference_job",
    "preference_summary",
    "report_job",
    "start_compare_sets",
    "start_counterfactual_collection",
    "start_crbo",
    "start_per_query_csv",
    "start_preference",
    "start_rebuild",
    "start_report",
    "write_counterfactual_collection",
]
