"""The annotation app's public reads, for other apps: explicit re-exports, nothing defined here.

The rule for both facades (this one and :mod:`annotation.services`): they are the app's public
surface for OTHER apps; inside ``annotation``, code imports the sub-domain module that defines a
name, never a facade. A facade holds exactly the names other apps use.
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
    "CITATION", "adjudicated_labels", "answers_version", "audit_labels", "batch_of_query_set", "batch_overview",
    "batch_state", "batches", "dashboard_panels", "gold_judgments", "gold_labels", "is_machine_labelled",
    "judgments_frame", "label_probabilities", "labels_with_sources", "latest_routing", "min_votes",
    "non_gendered_by_source", "pay_figures", "query_texts", "remembered", "study_facts",
]  # fmt: skip
