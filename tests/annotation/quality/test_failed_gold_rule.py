"""A failed gold check loses the HIT's pay; its other answers are kept or discarded by the batch's
rule, declared once among the batch options (issue 45, item 3)."""

import pytest
from django.urls import reverse

from annotation import services
from annotation.crowd.selectors import answer_counts, spent
from annotation.crowd.services.batches import read_gold_file
from annotation.crowd.services.sync import sync_batch
from annotation.machine.report.selectors import label_probabilities
from annotation.models import Assignment, Batch
from annotation.quality.selectors import gold_failed_qids
from annotation.results.selectors.gold import gold_discarded_assignments, gold_judgments
from annotation.results.selectors.labels import answers_version, judgments_frame
from metrics.formatting import crowd_quality_note
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from tests.annotation.conftest import answers_for


def _gold_batch(query_set, tmp_path, name, **options):
    gold_file = tmp_path / "gold.tsv"
    gold_file.write_text("g1\twhat is a mother\tf\ng2\twhat is a father\tm\n")
    settings = services.BatchSettings(
        queries_per_hit=3, assignments_per_query=2, gold_per_hit=2, gold_pass_fraction=1.0, **options
    )
    batch = services.create_batch(name, settings, query_set=query_set, gold=read_gold_file(gold_file))
    services.publish_batch(batch)
    return batch


def _answer(batch, annotators):
    """ann-a answers both HITs right; ann-b both, but one check question of HIT 1 wrong."""
    for user in annotators[:2]:
        while (assignment := next_assignment(user, batch)) is not None:
            wrong = user.username == "ann-b" and assignment.hit.position == 1
            submit_local_assignment(assignment, answers_for(assignment, override={"g1": "m"} if wrong else None))


def _figures(batch):
    counts = answer_counts([batch.pk])["assignments"]
    frame = judgments_frame(batch)
    return {
        "answered": counts["status_submitted"] + counts["status_approved"],
        "gold_failures": counts["failed_gold"],
        "spent": spent(batch),
        "votes": len(frame),
        "voters_of_hit_1": sorted(frame[frame["item"].isin(_real_qids(batch, 1))]["worker"].unique().tolist()),
        "failed_qids": sorted(gold_failed_qids(batch)),
    }


def _real_qids(batch, position):
    hit = batch.hits.get(position=position)
    return [hq.batch_query.qid for hq in hit.hit_queries.select_related("batch_query") if not hq.batch_query.is_gold]


@pytest.mark.parametrize("rule", ["discard", "keep"])
def test_a_failed_check_loses_the_pay_and_the_rule_decides_the_other_answers(query_set, annotators, tmp_path, rule):
    batch = _gold_batch(query_set, tmp_path, f"g-{rule}", failed_gold_answers=rule)
    assert Batch.objects.get(pk=batch.pk).failed_gold_answers == rule
    _answer(batch, annotators)
    sync_batch(batch)
    failed = Assignment.objects.get(hit__batch=batch, gold_passed=False)
    assert failed.status == Assignment.Status.REJECTED  # the pay is lost under either rule

    figures = _figures(batch)
    hit_1 = _real_qids(batch, 1)
    ann_b = failed.worker.pseudonym
    # Paid work and gold failures count the same under both rules: 3 approved of 4, one failure,
    # three HITs at $0.05 (in-house: no fee).
    assert figures["answered"] == 3 and figures["gold_failures"] == 1
    assert str(spent(batch)) == "0.15"
    if rule == "keep":
        assert figures["votes"] == 12  # ann-b's answers to HIT 1's real queries count
        assert ann_b in figures["voters_of_hit_1"] and figures["failed_qids"] == []
    else:
        assert figures["votes"] == 9
        assert ann_b not in figures["voters_of_hit_1"] and figures["failed_qids"] == sorted(hit_1)


@pytest.mark.parametrize("rule", ["discard", "keep"])
def test_the_crowd_model_reads_the_gold_answers_of_a_failed_check_under_either_rule(
    query_set, annotators, tmp_path, rule
):
    """The rejected assignment's wrong gold answer (g1 answered m, known f) is what tells the model
    that ann-b errs (issue 58): the model reads it whether or not the rule keeps its other answers."""
    batch = _gold_batch(query_set, tmp_path, f"gj-{rule}", failed_gold_answers=rule)
    _answer(batch, annotators)
    sync_batch(batch)
    failed = Assignment.objects.get(hit__batch=batch, gold_passed=False)
    assert failed.status == Assignment.Status.REJECTED
    gold = gold_judgments(batch)
    ann_b = gold[gold["worker"] == failed.worker.pseudonym]
    # ann-b met both gold questions in both HITs: 4 answers, the wrong one among them.
    assert len(ann_b) == 4 and ((ann_b["item"] == "g1") & (ann_b["label"] == "m")).sum() == 1
    assert len(gold) == 8
    # The labels are a selection only when the rule discarded the failed assignment's other answers:
    # the crowd-quality warning says so (reason "selected", with the count) on the report.
    quality = label_probabilities(batch).quality
    assert gold_discarded_assignments(batch) == quality["discarded"] == (1 if rule == "discard" else 0)
    assert ("selected" in quality["reasons"]) == (rule == "discard")
    note = crowd_quality_note(quality)
    assert ("the answers of 1 assignment that failed gold were discarded" in note) == (rule == "discard")


def test_the_default_is_to_discard_and_the_option_is_offered_by_form_api_and_page(
    query_set, annotators, researcher, client, tmp_path
):
    assert services.BatchSettings().failed_gold_answers == "discard"
    client.force_login(researcher)
    form = client.get(reverse("annotation:batch-create")).content.decode()
    assert 'name="failed_gold_answers"' in form
    body = {"name": "api-keep", "queries": "gq", "reward": "0.05", "failed_gold_answers": "keep"}
    created = client.post("/api/annotation/batches/", body, content_type="application/json")
    assert created.status_code == 201, created.content
    assert Batch.objects.get(name="api-keep").failed_gold_answers == "keep"
    assert client.get("/api/annotation/batches/api-keep/").json()["failed_gold_answers"] == "keep"
    refused = client.post(
        "/api/annotation/batches/",
        {**body, "name": "api-bad", "failed_gold_answers": "maybe"},
        content_type="application/json",
    )
    assert refused.status_code == 400 and "failed_gold_answers" in refused.content.decode()
    assert not Batch.objects.filter(name="api-bad").exists()
    page = client.get(reverse("annotation:batch-detail", args=["api-keep"])).content.decode()
    assert '<span id="failed-gold-rule">keeps its other answers</span>' in page


def test_keeping_the_answers_changes_the_results_key_at_the_rejection_only_as_a_review(query_set, annotators, tmp_path):
    """The kept answers are in the results before and after the review (its rejection): the key moves
    with the review (times), the votes do not."""
    batch = _gold_batch(query_set, tmp_path, "g-key", failed_gold_answers="keep")
    _answer(batch, annotators)
    before = (answers_version(batch), len(judgments_frame(batch)))
    sync_batch(batch)
    after = (answers_version(batch), len(judgments_frame(batch)))
    assert before[1] == after[1] == 12
    assert before[0] != after[0]
