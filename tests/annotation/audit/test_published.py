"""The dataset card and the paper's methods state the audit sample in the same sentence (issue 81, item 1)."""

from __future__ import annotations

import pytest
from django.utils import timezone

from annotation.audit.selectors import audit_items
from annotation.audit.services.samples import draw_audit_sample, label_audit_query
from annotation.exports.selectors import study_facts
from annotation.results.selectors.labels import CITATION
from publishing import hub_card
from publishing.methods_text import annotation_paragraph
from publishing.tables import configs_for
from tests.publishing.test_label_provenance import _one_query_facts

pytestmark = pytest.mark.django_db


def test_the_card_and_the_methods_state_the_audit_sample(big_batch, people):
    assert study_facts(big_batch)["audit"] is None
    draw_audit_sample(big_batch, by=people["rita"], size=50, seed=7)
    for qid in [row["qid"] for row in audit_items(big_batch)[:2]]:
        label_audit_query(big_batch, qid, "n", by=people["rita"])
    today = timezone.now().date().isoformat()
    sentence = (
        f"An expert audit sample of 50 queries, a simple random sample of the 120 queries of the batch drawn with "
        f"seed 7 on {today}, was labelled without the crowd's answers by rita on {today} (2 of 50 labelled)."
    )
    facts = _one_query_facts() | {"audit": study_facts(big_batch)["audit"]}
    configs = configs_for(False)
    card = hub_card.card(
        facts,
        configs,
        {c.name: 1 for c in configs},
        license_id="cc-by-4.0",
        pretty_name="b",
        citation=CITATION,
        published="2026-01-31",
    )
    assert sentence in card
    assert sentence in annotation_paragraph(study_facts(big_batch), {})
    assert "audit sample" not in hub_card.card(
        _one_query_facts(),
        configs,
        {c.name: 1 for c in configs},
        license_id="cc-by-4.0",
        pretty_name="b",
        citation=CITATION,
        published="2026-01-31",
    )
