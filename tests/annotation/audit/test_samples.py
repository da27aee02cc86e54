"""The audit sample's draw, labels and import (issue 81, item 1): the draw is a seeded simple random sample
that an independent computation reproduces; labels are given by those allowed, changed only by their labeller
or an owner with the change kept; an imported file is all or nothing, a bad line named ``file:line``."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from django.core.exceptions import PermissionDenied

from annotation.audit.selectors import audit_items, audit_labels
from annotation.audit.services.samples import (
    draw_audit_sample,
    import_audit_labels,
    label_audit_query,
    trust_labeller,
)
from annotation.models import AuditItem
from core.errors import FieldError, StateError
from genderbias.crowd.audit_size import suggested_audit_size
from genderbias.errors import InputError
from genderbias.machine.calibration_sample import random_sample
from tests.annotation.audit.conftest import QUERIES

pytestmark = pytest.mark.django_db


def _numpy_draw(seed: int, n: int) -> list[str]:
    """The draw computed apart from the service: numpy's permutation of the sorted non-gold qids, its first n."""
    population = sorted(qid for qid, _ in QUERIES)
    return [population[i] for i in np.random.default_rng(seed).permutation(len(population))[:n]]


def audit_sample_qids(batch) -> list[str]:
    """The audited queries' ids in draw order, as the audit page lists them."""
    return [row["qid"] for row in audit_items(batch)]


def test_the_draw_is_numpys_seeded_permutation_of_the_batchs_queries_and_leaves_gold_out(big_batch, people):
    sample = draw_audit_sample(big_batch, by=people["rita"], size=60, seed=2026)
    assert audit_sample_qids(big_batch) == _numpy_draw(2026, 60)
    assert (sample.size, sample.seed, sample.population, sample.drawn_by) == (60, 2026, 120, people["rita"])
    assert not {"g1", "g2"} & set(audit_sample_qids(big_batch))


def test_extending_keeps_the_drawn_queries_and_other_seeds_or_shrinking_are_refused(big_batch, people):
    draw_audit_sample(big_batch, by=people["rita"], size=50, seed=9)
    label_audit_query(big_batch, audit_sample_qids(big_batch)[0], "n", by=people["rita"])
    draw_audit_sample(big_batch, by=people["rita"], size=80)
    assert audit_sample_qids(big_batch) == _numpy_draw(9, 80)
    assert audit_labels(big_batch) == {_numpy_draw(9, 1)[0]: "n"}
    with pytest.raises(StateError, match="seed 9"):
        draw_audit_sample(big_batch, by=people["rita"], size=90, seed=10)
    with pytest.raises(StateError, match="never shrinks"):
        draw_audit_sample(big_batch, by=people["rita"], size=70)
    with pytest.raises(FieldError) as too_many:
        draw_audit_sample(big_batch, by=people["rita"], size=121)
    assert too_many.value.field == "size"
    assert AuditItem.objects.count() == 80


def test_every_query_is_equally_likely_to_be_drawn_across_seeds():
    """4,000 seeds, 5 of 20 drawn: each query's count is Binomial(4000, 1/4) (mean 1000, s.d. 27.4), and each
    is first drawn Binomial(4000, 1/20) times (mean 200, s.d. 13.8); every count within 4.5 s.d."""
    qids = [f"q{i}" for i in range(20)]
    drawn, first = Counter(), Counter()
    for seed in range(4000):
        sample = random_sample(qids, 5, seed=seed)
        assert len(set(sample)) == 5  # without replacement
        drawn.update(sample)
        first[sample[0]] += 1
    assert all(abs(drawn[q] - 1000) < 4.5 * 27.4 for q in qids), drawn
    assert all(abs(first[q] - 200) < 4.5 * 13.8 for q in qids), first


@pytest.mark.parametrize(
    ("population", "share", "size"),
    [(1000, 0.8, 50), (1000, 0.5, 50), (1000, 0.2, 125), (1000, 0.3, 84), (1000, 0.1, 250), (30, 0.5, 30)],
)
def test_the_planned_size_is_25_over_the_share_at_least_50_at_most_the_batch(population, share, size):
    assert min(population, suggested_audit_size(share)) == size


def test_the_default_draw_takes_the_planned_size(big_batch, people):
    assert draw_audit_sample(big_batch, by=people["rita"], expected_share=0.25).size == 100


def test_who_may_label_and_who_may_change_a_label(big_batch, people):
    draw_audit_sample(big_batch, by=people["rita"], size=50, seed=1)
    qid = audit_sample_qids(big_batch)[0]
    with pytest.raises(PermissionDenied):
        draw_audit_sample(big_batch, by=people["vic"], size=60)
    for outsider in ("vic", "ann"):
        with pytest.raises(PermissionDenied):
            label_audit_query(big_batch, qid, "f", by=people[outsider])
    label_audit_query(big_batch, qid, "f", by=people["rita"])
    with pytest.raises(PermissionDenied, match="rita"):
        label_audit_query(big_batch, qid, "m", by=people["rob"])  # another researcher's label
    label_audit_query(big_batch, qid, "m", by=people["owner"])  # an owner may change it, the old label kept
    item = AuditItem.objects.get(batch_query__qid=qid)
    assert (item.label, item.labeller_name) == ("m", "owner")
    assert [(h["label"], h["labeller"], h["changed_by"]) for h in item.history] == [("f", "rita", "owner")]

    trust_labeller(big_batch, "ann", by=people["rita"])  # a trusted annotator labels
    second = audit_sample_qids(big_batch)[1]
    label_audit_query(big_batch, second, "non-gendered", by=people["ann"])
    assert audit_labels(big_batch) == {qid: "m", second: "n"}
    with pytest.raises(FieldError) as bad:
        label_audit_query(big_batch, second, "x", by=people["ann"])
    assert bad.value.field == "label"
    with pytest.raises(FieldError) as absent:
        label_audit_query(big_batch, "g1", "f", by=people["rita"])
    assert absent.value.field == "qid"


def test_an_import_names_the_bad_line_and_writes_nothing(big_batch, people, tmp_path):
    draw_audit_sample(big_batch, by=people["rita"], size=50, seed=3)
    first, second = audit_sample_qids(big_batch)[:2]
    outside = next(qid for qid, _ in QUERIES if qid not in audit_sample_qids(big_batch))
    bad_label = tmp_path / "labels.tsv"
    bad_label.write_text(f"{first}\tn\n{second}\tf\n{first}x\tmaybe\n")
    with pytest.raises(InputError, match=r"labels.tsv:3: unknown label 'maybe'"):
        import_audit_labels(big_batch, bad_label, by=people["rita"])
    not_sampled = tmp_path / "labels.csv"
    not_sampled.write_text(f"qid,label,labeller\n{first},n,Dr Expert\n{outside},f,Dr Expert\n")
    with pytest.raises(InputError, match=rf"labels.csv:3: qid '{outside}' is not in batch audited's audit sample"):
        import_audit_labels(big_batch, not_sampled, by=people["rita"])
    assert audit_labels(big_batch) == {}  # nothing half-written
    good = tmp_path / "good.csv"
    good.write_text(f"qid,label,labeller\n{first},n,Dr Expert\n{second},female,\n")
    assert import_audit_labels(big_batch, good, by=people["rita"]) == 2
    assert audit_labels(big_batch) == {first: "n", second: "f"}
    names = dict(AuditItem.objects.exclude(label="").values_list("batch_query__qid", "labeller_name"))
    assert names == {first: "Dr Expert", second: "rita"}
    with pytest.raises(PermissionDenied):
        import_audit_labels(big_batch, good, by=people["vic"])
