"""Services of the metrics app: everything that measures, stores or starts a measurement, re-exported here
(``from metrics import services; services.build_report(...)``; the modules: docs/architecture.md).

They read runs through :mod:`pooling.services` and the crowd through :mod:`annotation.selectors` only, and leave
the computing to the library; one module per topic, named so that it is never taken for the pure module it drives.
``LabelSensitivity`` is imported from :mod:`genderbias.crowd.sensitivity` (it loads numpy and pandas).
"""

from core.errors import ServiceError
from genderbias.text.wordlists import REPRESENTATIVE_WORDLIST, default_representative_wordlist

from .counterfactual_collection import counterfactual_job, start_counterfactual_collection
from .crbo import crbo_job, crbo_summary, start_crbo
from .labelling import ask_label_sensitivity, label_sensitivity, parse_dependences
from .per_query_file import build_per_query_csv, cached_per_query_csv, start_per_query_csv
from .planning import CostSettings, plan_study
from .plot_cache import cached_plot, plot_key, plot_path
from .report_settings import ReportSettings, parse_cutoffs, parse_measures
from .reports import build_batch_report, build_report, compute_batch_report, start_rebuild, start_report
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
    "REPRESENTATIVE_WORDLIST", "CostSettings", "ReportSettings", "ServiceError", "ask_label_sensitivity",
    "build_batch_report", "build_per_query_csv", "build_report", "build_set_reports", "cached_per_query_csv",
    "cached_plot", "check_comparison", "check_set_building", "check_versioned_run", "compare_reports",
    "compare_sets_job", "compute_batch_report", "counterfactual_job", "crbo_job", "crbo_summary",
    "default_representative_wordlist", "label_sensitivity", "parse_cutoffs", "parse_dependences", "parse_measures",
    "plan_study", "plot_key", "plot_path", "preference_job", "preference_summary", "start_compare_sets",
    "start_counterfactual_collection", "start_crbo", "start_per_query_csv", "start_preference", "start_rebuild",
    "start_report",
]  # fmt: skip
