"""The study's facts (annotation.exports.selectors.study_facts): one read, the figures every description states."""

import json
import math

import pytest

from annotation.exports.selectors import share_interval, study_facts
from annotation.quality.services.adjudication import adjudicate
from annotation.results.selectors.agreement import agreement
from tests.annotation.results.test_export import _annotate


@pytest.fixture
def annotated(local_batch, annotators):
    """Two votes per query; ann-b disagrees on 104 (o vs f), so 104 is disputed (1-1)."""
    _annotate(local_batch, annotators[:2], {"ann-b": {"104": "f"}})
    return local_batch


def test_counts_sources_and_set_aside_queries(annotated):
    facts = study_facts(annotated)
    labels = facts["labels"]
    # TRUTH: 101 n, 102 f, 103 m, 104 o (disputed 1-1 here), 105 n, 106 f
    assert labels["queries"] == 6 and labels["labelled"] == 5
    assert labels["counts"] == {"n": 2, "f": 2, "m": 1, "o": 0}
    assert labels["sources"] == {"crowd majority": 5}
    assert labels["set_aside"] == {"disputed": 1, "too_few_votes": 0}
    assert labels["adjudicated"] == 0
    assert facts["agreement"]["krippendorff_alpha"] == pytest.approx(76 / 98, abs=1e-9)  # as test_export
    assert facts["agreement"]["alpha_ci"] == agreement(annotated)["alpha_ci"]  # the page's interval, not another draw
    assert facts["batch"]["name"] == annotated.name and facts["pool"] is None and facts["machine"] is None
    json.dumps({k: v for k, v in facts.items() if k != "results"}, allow_nan=False)  # JSON-safe as it is


def test_a_ruling_is_counted_and_settles_the_disputed_query(annotated, researcher):
    adjudicate(annotated, "104", "o", "other or multiple genders", researcher)
    labels = study_facts(annotated)["labels"]
    assert labels["labelled"] == 6 and labels["adjudicated"] == 1
    assert labels["set_aside"] == {"disputed": 0, "too_few_votes": 0}
    assert labels["sources"] == {"crowd majority": 5, "adjudicated": 1}


def test_share_interval_is_wilson_by_hand():
    # 2 of 5, z = 1.959964: centre (0.4 + z²/10) / (1 + z²/5), half z·sqrt(0.24/5 + z²/100) / (1 + z²/5)
    z = 1.959963984540054
    d = 1 + z**2 / 5
    centre, half = (0.4 + z**2 / 10) / d, z * math.sqrt(0.4 * 0.6 / 5 + z**2 / 100) / d
    share = share_interval(2, 5)
    assert share["estimate"] == 0.4
    assert share["ci"] == [round(centre - half, 4), round(centre + half, 4)]
    assert share_interval(0, 0)["estimate"] is None


@pytest.mark.parametrize(("count", "total"), [(0, 7), (2, 5), (187, 413), (413, 413), (1, 3750)])
def test_share_interval_equals_scipys_wilson_interval(count, total):
    from scipy.stats import binomtest

    reference = binomtest(count, total).proportion_ci(confidence_level=0.95, method="wilson")
    assert share_interval(count, total)["ci"] == [round(reference.low, 4), round(reference.high, 4)]
