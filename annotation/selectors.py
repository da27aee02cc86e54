"""The annotation app's public reads, for other apps: explicit re-exports, nothing defined here.

The rule for both facades, :mod:`annotation.selectors` (reads) and :mod:`annotation.services`
(writes): they are the app's public surface for OTHER apps (``metrics``; and the job
discovery of :mod:`core.jobs.registry`, which imports each app's ``services``). Inside
``annotation``, code imports the sub-domain module that defines a name
(``annotation.results.selectors``, ``annotation.crowd.services.batches`` ...), never a facade.
A facade holds exactly the names other apps use: a name another app needs is added here.

Each name is defined in its sub-domain's selectors (no writes, no heavy imports at module level):

- :mod:`annotation.crowd.selectors` -- batches, their progress and spending; :mod:`annotation.crowd.panels`
  -- what the platforms add to the dashboard (``dashboard_panels``);
- :mod:`annotation.results.selectors` -- judgments, labels and their sources, agreement, gold,
  rulings (label sensitivity reads the crowd here), each batch's state (the researchers' dashboard);
- :mod:`annotation.machine.selectors` -- machine runs, calibration, the non-gendered sets by
  label source;
- :mod:`annotation.exports.selectors` -- the study's facts every published description states.

Each crowd platform's reads are in its own app (``platforms/<name>/selectors``), above this one.
"""

from annotation.audit.selectors import audit_labels
from annotation.crowd.panels import dashboard_panels
from annotation.crowd.selectors import batches, is_machine_labelled, pay_figures, query_texts
from annotation.exports.selectors import study_facts
from annotation.machine.report.selectors import label_probabilities
from annotation.machine.selectors import non_gendered_by_source
from annotation.results.selectors.cache import remembered
from annotation.results.selectors.gold import adjudicated_labels, gold_judgments, gold_labels
from annotation.results.selectors.labels import (
    CITATION,
    answers_version,
    judgments_frame,
    labels_with_sources,
    latest_routing,
    min_votes,
)
from annotation.results.selectors.state import batch_of_query_set, batch_overview, batch_state

__all__ = [
    "CITATION",
    "adjudicated_labels",
    "answers_version",
    "audit_labels",
    "batch_of_query_set",
    "batch_overview",
    "batch_state",
    "batches",
    "dashboard_panels",
    "gold_judgments",
    "gold_labels",
    "is_machine_labelled",
    "judgments_frame",
    "label_probabilities",
    "labels_with_sources",
    "latest_routing",
    "min_votes",
    "non_gendered_by_source",
    "pay_figures",
    "query_texts",
    "remembered",
    "study_facts",
]
