"""An annotator corrects the HIT they submitted last, while it is not yet used (issue 45, item 3)."""

import datetime as dt
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation import services
from annotation.crowd.services.locking import one_per_batch, reads_answers
from annotation.crowd.services.sync import sync_batch
from annotation.models import Assignment, Batch, BonusPayment, Escalation, Export, Judgment
from annotation.quality.services.adjudication import adjudicate
from annotation.results.selectors.labels import answers_version, judgments_frame
from platforms.inhouse.services.annotators import create_annotator
from platforms.inhouse.services.corrections import NotCorrectable, correct_assignment, why_not_correctable
from platforms.inhouse.services.handout import next_assignment
from platforms.inhouse.services.hit_page import submit_local_assignment
from platforms.prolific.models import ProlificSubmission
from tests.annotation.conftest import TRUTH, answers_for, make_batch

#: A wrong label for every query of the fixtures (none equals its truth).
WRONG = {"n": "f", "f": "m", "m": "o", "o": "n"}


def _labels(assignment) -> dict[str, str]:
    return dict(Judgment.objects.filter(assignment=assignment).values_list("batch_query__qid", "label"))


def _submit_wrong(user):
    """``user`` takes a HIT and submits a wrong answer to each of its real queries."""
    assignment = next_assignment(user)
    override = {qid: WRONG[label] for qid, label in TRUTH.items()}
    submit_local_assignment(assignment, answers_for(assignment, override=override))
    assignment.refresh_from_db()
    return assignment


def test_the_page_after_submitting_offers_the_correction_and_it_replaces_the_answers(local_batch, annotators, client):
    client.force_login(annotators[0])
    first = Assignment.objects.get(pk=int(client.get(reverse("annotation:next")).url.rstrip("/").rsplit("/", 1)[1]))
    wrong = answers_for(first, override={qid: WRONG[label] for qid, label in TRUTH.items()})
    after = client.post(reverse("annotation:assignment", args=[first.pk]), wrong, follow=True)
    correct_url = reverse("annotation:assignment-correct", args=[first.pk])
    html = after.content.decode()
    assert f'href="{correct_url}" id="correct-last"' in html  # beside the confirmation, on the next HIT
    before_version = answers_version(local_batch)
    before_ids = set(Judgment.objects.filter(assignment=first).values_list("pk", flat=True))

    page = client.get(correct_url)
    assert page.status_code == 200
    shown = page.content.decode()
    for field, label in wrong.items():  # the submitted answers are shown, ready to change
        assert f'name="{field}" value="{label}" aria-keyshortcuts' in shown
        assert shown.count(f'name="{field}" value="{label}" aria-keyshortcuts="') == 1
    assert 'id="correcting"' in shown and '<details class="instructions" id="instructions">' in shown

    done = client.post(correct_url, answers_for(first))
    assert done.status_code == 302 and done.url == reverse("annotation:next")
    hit_qids = {hq.batch_query.qid for hq in first.hit.hit_queries.select_related("batch_query")}
    assert _labels(first) == {qid: TRUTH[qid] for qid in hit_qids}  # one judgment a query, the new label
    assert Judgment.objects.filter(assignment=first).count() == len(hit_qids)
    assert not before_ids & set(Judgment.objects.filter(assignment=first).values_list("pk", flat=True))
    first.refresh_from_db()
    assert first.status == Assignment.Status.SUBMITTED and first.raw_answer.count('"q-') == len(hit_qids)
    # Every figure reads the corrected answers: the results' key moved and the votes are the new ones.
    assert answers_version(local_batch) != before_version
    frame = judgments_frame(local_batch)
    assert dict(zip(frame["item"], frame["label"], strict=True)) == {qid: TRUTH[qid] for qid in hit_qids}


def test_a_repeated_correction_changes_nothing(local_batch, annotators):
    assignment = _submit_wrong(annotators[0])
    right = answers_for(assignment)
    assert correct_assignment(assignment, right) is not None
    ids = sorted(Judgment.objects.filter(assignment=assignment).values_list("pk", flat=True))
    version = answers_version(local_batch)
    assert correct_assignment(assignment, right) is None  # the same answers again: nothing written
    assert sorted(Judgment.objects.filter(assignment=assignment).values_list("pk", flat=True)) == ids
    assert answers_version(local_batch) == version


def test_the_home_page_offers_the_last_hit_while_it_can_be_corrected(local_batch, annotators, client):
    assignment = _submit_wrong(annotators[0])
    client.force_login(annotators[0])
    url = reverse("annotation:assignment-correct", args=[assignment.pk])
    assert url in client.get(reverse("annotation:batch-list")).content.decode()
    sync_batch(local_batch)  # reviewed (approved): used
    assert url not in client.get(reverse("annotation:batch-list")).content.decode()


def test_nobody_corrects_another_annotators_hit(local_batch, annotators, client):
    assignment = _submit_wrong(annotators[0])
    client.force_login(annotators[1])
    url = reverse("annotation:assignment-correct", args=[assignment.pk])
    assert client.get(url).status_code == 404
    assert client.post(url, answers_for(assignment)).status_code == 404
    assert set(_labels(assignment).values()) <= set(WRONG.values())
    assert _labels(assignment) == {q: WRONG[TRUTH[q]] for q in _labels(assignment)}


def _used_by_sync(batch, assignment, researcher):
    sync_batch(batch)


def _used_by_escalation(batch, assignment, researcher):
    hit = assignment.hit
    Escalation.objects.create(batch=batch, hit=hit, added=1, assignments_before=2, disputed=[], cost=0)


def _used_by_ruling(batch, assignment, researcher):
    qid = assignment.hit.hit_queries.filter(batch_query__is_gold=False).first().batch_query.qid
    adjudicate(batch, qid, "n", "read the query", researcher)


def _used_by_export(batch, assignment, researcher):
    Export.objects.create(batch=batch, category="n", path="x.tsv", card_path="x.md", format="tsv", queries=0)


def _used_by_time(batch, assignment, researcher):
    Assignment.objects.filter(pk=assignment.pk).update(submitted_at=timezone.now() - dt.timedelta(minutes=11))


def _used_by_a_later_hit(batch, assignment, researcher):
    later = next_assignment(assignment.worker.identity.user)
    submit_local_assignment(later, answers_for(later))


def _parent(batch):
    """The batch ``batch``'s answers add to (a machine-labelled batch's crowd part reads as its parent's)."""
    parent = make_batch(batch.query_set, name="parent")
    Batch.objects.filter(pk=batch.pk).update(parent=parent)
    return parent


def _used_by_the_parents_escalation(batch, assignment, researcher):
    _used_by_escalation(_parent(batch), assignment, researcher)


def _used_by_a_ruling_in_the_parent(batch, assignment, researcher):
    _used_by_ruling(_parent(batch), assignment, researcher)  # the same qid, the parent's batch query


def _used_by_the_parents_export(batch, assignment, researcher):
    _used_by_export(_parent(batch), assignment, researcher)


def _bonus(batch, **fields):
    BonusPayment.objects.create(batch=batch, submission_id="s", amount=Decimal("0.25"), **fields)


def _used_by_a_bonus_on_it(batch, assignment, researcher):
    _bonus(batch, assignment=assignment, participant_id=assignment.worker.identity.external_id)


def _used_by_the_workers_bonus_in_the_parent(batch, assignment, researcher):
    _bonus(_parent(batch), participant_id=assignment.worker.identity.external_id)


def _used_by_a_payment_decided_on_prolific(batch, assignment, researcher):
    Assignment.objects.filter(pk=assignment.pk).update(provider_assignment_id="5f0c0ffee0000000000000s1")
    assignment.provider_assignment_id = "5f0c0ffee0000000000000s1"
    ProlificSubmission.objects.create(
        submission_id=assignment.provider_assignment_id,
        batch=batch,
        participant_id="p",
        status="APPROVED",
        listed_at=timezone.now(),
    )


@pytest.mark.parametrize(
    ("use", "reason"),
    [
        (_used_by_sync, "already reviewed"),
        (_used_by_escalation, "an escalation"),
        (_used_by_the_parents_escalation, "an escalation"),
        (_used_by_ruling, "a researcher's ruling"),
        (_used_by_a_ruling_in_the_parent, "a researcher's ruling"),
        (_used_by_export, "an export"),
        (_used_by_the_parents_export, "an export"),
        (_used_by_a_bonus_on_it, "a bonus"),
        (_used_by_the_workers_bonus_in_the_parent, "a bonus"),
        (_used_by_a_payment_decided_on_prolific, "decided on Prolific"),
        (_used_by_time, "run out"),
        (_used_by_a_later_hit, "only the last one"),
    ],
)
def test_a_used_hit_is_never_corrected(local_batch, annotators, researcher, client, use, reason):
    assignment = _submit_wrong(annotators[0])
    before = _labels(assignment)
    assert why_not_correctable(Assignment.objects.select_related("hit__batch").get(pk=assignment.pk)) is None
    use(local_batch, assignment, researcher)
    with pytest.raises(NotCorrectable, match=reason):
        correct_assignment(assignment, answers_for(assignment))
    client.force_login(annotators[0])
    url = reverse("annotation:assignment-correct", args=[assignment.pk])
    page = client.post(url, answers_for(assignment))
    assert page.status_code == 409 and reason in page.content.decode().replace("&#x27;", "'")
    assert _labels(assignment) == before


def test_unrelated_uses_leave_the_hit_correctable(local_batch, annotators, researcher):
    """A use before the submission, or of another batch, or a ruling on a query not in the HIT, reads
    none of its answers: the HIT stays correctable."""
    assignment = _submit_wrong(annotators[0])
    other = make_batch(local_batch.query_set, name="other")
    _used_by_escalation(other, assignment, researcher)
    _used_by_export(other, assignment, researcher)
    _bonus(other, participant_id=assignment.worker.identity.external_id)
    in_hit = {hq.batch_query.qid for hq in assignment.hit.hit_queries.select_related("batch_query")}
    outside = next(qid for qid in TRUTH if qid not in in_hit)
    adjudicate(local_batch, outside, "n", "another HIT's query", researcher)
    Export.objects.filter(batch=other).update(created=assignment.submitted_at - dt.timedelta(seconds=1))
    _used_by_export(local_batch, assignment, researcher)
    Export.objects.filter(batch=local_batch).update(created=assignment.submitted_at - dt.timedelta(seconds=1))
    assert why_not_correctable(Assignment.objects.select_related("hit__batch").get(pk=assignment.pk)) is None
    assert correct_assignment(assignment, answers_for(assignment)) is not None


@pytest.mark.parametrize(
    ("holder", "reason"),
    [
        (one_per_batch("A sync"), "a sync of batch 'b1'"),
        (one_per_batch("An escalation"), "an escalation of batch 'b1'"),
        (one_per_batch("Paying bonuses"), "paying bonuses of batch 'b1'"),
        (reads_answers("An export"), "an export of batch 'b1'"),
    ],
)
@pytest.mark.parametrize("of_parent", [False, True])
def test_no_correction_while_a_use_is_under_way(local_batch, annotators, holder, reason, of_parent):
    """While a sync, an escalation, a bonus payment or an export of its batch (or of the batch it adds to)
    holds its lease, the HIT is not corrected; once it ends, it is again (had nothing been recorded)."""
    assignment = _submit_wrong(annotators[0])
    used = _parent(local_batch) if of_parent else local_batch
    outcome = {}

    @holder
    def use(batch):
        with pytest.raises(NotCorrectable, match="being used right now") as refused:
            correct_assignment(assignment, answers_for(assignment))
        outcome["message"] = str(refused.value)

    use(used)
    assert reason.replace("'b1'", f"{used.name!r}") in outcome["message"]
    assert _labels(assignment) == {q: WRONG[TRUTH[q]] for q in _labels(assignment)}
    assert correct_assignment(assignment, answers_for(assignment)) is not None  # the lease is gone


def test_a_correction_goes_on_while_an_action_that_reads_no_answers_holds_the_batch(local_batch, annotators):
    """Publishing more places holds the batch's lease but reads no answer: a correction is not held up."""
    assignment = _submit_wrong(annotators[0])

    @one_per_batch("Publishing")
    def publish_more(batch):
        return correct_assignment(assignment, answers_for(assignment))

    assert publish_more(local_batch) is not None
    assert _labels(assignment) == {q: TRUTH[q] for q in _labels(assignment)}


def test_gold_answers_are_not_corrected(gold_batch, annotators, settings):
    assignment = next_assignment(annotators[0])
    submit_local_assignment(assignment, answers_for(assignment, override={"g1": "n"}))  # fails the check
    assignment.refresh_from_db()
    assert assignment.gold_passed is False
    right = answers_for(assignment)  # every answer right, the gold one too
    wrong_real = {qid: WRONG[TRUTH[qid]] for qid in TRUTH}
    right.update(
        {
            hq.field_name: wrong_real[hq.batch_query.qid]
            for hq in assignment.hit.hit_queries.select_related("batch_query")
            if not hq.batch_query.is_gold
        }
    )
    correct_assignment(assignment, right)
    assignment.refresh_from_db()
    labels = _labels(assignment)
    assert labels["g1"] == "n"  # the first answer to a check question stands
    assert assignment.gold_passed is False
    assert all(labels[q] == wrong_real[q] for q in labels if not q.startswith("g"))  # the others corrected


def test_corrections_off_when_the_window_is_zero(local_batch, annotators, settings):
    settings.ANSWER_CORRECTION_SECONDS = 0
    assignment = _submit_wrong(annotators[0])
    with pytest.raises(NotCorrectable, match="run out"):
        correct_assignment(assignment, answers_for(assignment))


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgresql
def test_concurrent_corrections_leave_one_judgment_per_query(query_set):
    """Four tabs post a correction at the same moment: the assignment ends with one judgment a query."""
    import threading

    from django.db import connection

    from tests.annotation.conftest import make_batch

    batch = make_batch(query_set, queries_per_hit=3, assignments_per_query=2)
    services.publish_batch(batch)
    assignment = _submit_wrong(create_annotator("double-correct"))
    start, outcomes = threading.Barrier(4), []

    def correct(label):
        try:
            answers = {hq.field_name: label for hq in assignment.hit.hit_queries.all()}
            start.wait(10)
            outcomes.append(correct_assignment(assignment, answers) is not None)
        except Exception as exc:  # any error fails the comparison below, with its text
            outcomes.append(str(exc))
        finally:
            connection.close()

    threads = [threading.Thread(target=correct, args=(label,)) for label in "nfmo"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert outcomes == [True] * 4
    judgments = Judgment.objects.filter(assignment=assignment)
    assert judgments.count() == 3 and len({j.label for j in judgments}) == 1


def test_the_no_more_hits_page_after_the_last_submit_offers_the_correction(local_batch, annotators, client):
    client.force_login(annotators[0])
    for _ in range(2):  # both HITs of the batch
        url = client.get(reverse("annotation:next")).url
        assignment = Assignment.objects.get(pk=int(url.rstrip("/").rsplit("/", 1)[1]))
        done = client.post(url, answers_for(assignment), follow=True)
    html = done.content.decode()
    assert "No more HITs" in html
    assert f'href="{reverse("annotation:assignment-correct", args=[assignment.pk])}" id="correct-last"' in html


@pytest.mark.django_db(transaction=True)
@pytest.mark.postgresql
def test_an_export_started_during_a_correction_reads_the_corrected_answers(query_set, monkeypatch, tmp_path):
    """The race of the review (issue 45): a correction has passed its checks and is writing when an export
    starts. The export waits for it at the batches' row lock and writes the corrected answers; a
    correction tried once the export is recorded is refused."""
    import json
    import threading

    from django.db import connection

    from annotation.exports.services import export_queries
    from platforms.inhouse.services import corrections
    from tests.annotation.conftest import make_batch

    batch = make_batch(query_set, queries_per_hit=3, assignments_per_query=1)
    services.publish_batch(batch)
    assignment = _submit_wrong(create_annotator("racer"))
    right = answers_for(assignment)
    checked, go, outcomes = threading.Event(), threading.Event(), {}
    record = corrections.record_answers

    def held_record(*args, **kwargs):  # the correction, past its checks and holding the locks, waits here
        checked.set()
        go.wait(30)
        return record(*args, **kwargs)

    monkeypatch.setattr(corrections, "record_answers", held_record)

    def run(name, work):
        try:
            outcomes[name] = work()
        except Exception as exc:  # any error fails the comparison below, with its text
            outcomes[name] = repr(exc)
        finally:
            connection.close()

    path = tmp_path / "all.jsonl"
    correcting = threading.Thread(target=run, args=("correction", lambda: correct_assignment(assignment, right)))
    exporting = threading.Thread(target=run, args=("export", lambda: export_queries(batch, "all", path, "jsonl")))
    correcting.start()
    assert checked.wait(30)
    exporting.start()
    # The export waits at the batches' row lock, before it reads a judgment (PostgreSQL says so).
    waiting = []
    for _ in range(300):
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT query FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%%FOR UPDATE%%'"
                " AND datname = current_database() AND pid <> pg_backend_pid()"  # this test's database only
            )
            waiting = cursor.fetchall()
        if waiting or not exporting.is_alive():
            break
        threading.Event().wait(0.1)
    assert waiting and "export" not in outcomes, outcomes
    go.set()
    correcting.join(30)
    exporting.join(30)
    assert not isinstance(outcomes["correction"], str | type(None)), outcomes  # done, not an error's text
    assert isinstance(outcomes["export"], Export), outcomes
    rows = {row["qid"]: row["label"] for row in map(json.loads, path.read_text().splitlines())}
    hit_qids = {hq.batch_query.qid for hq in assignment.hit.hit_queries.select_related("batch_query")}
    assert {qid: rows[qid] for qid in hit_qids} == {qid: TRUTH[qid] for qid in hit_qids}  # the corrected ones
    monkeypatch.setattr(corrections, "record_answers", record)
    with pytest.raises(NotCorrectable, match="an export"):
        correct_assignment(assignment, answers_for(assignment, override={q: WRONG[TRUTH[q]] for q in TRUTH}))


def test_a_dataset_read_from_the_answers_refuses_a_later_correction(local_batch, annotators, tmp_path):
    """Issue 53 (Medium): a correction was accepted after the dataset had read the labels; the zip made
    again then differed from the one published. Publishing the dataset is a use: refused after it."""
    from annotation.models import AnswerUse
    from publishing.services.dataset import publish_dataset

    assignment = _submit_wrong(annotators[0])
    before = _labels(assignment)
    publish_dataset(local_batch, tmp_path / "dataset", "cc-by-4.0")
    assert AnswerUse.objects.filter(batch=local_batch, action="A dataset").exists()
    with pytest.raises(NotCorrectable, match="already used \\(a dataset\\)"):
        correct_assignment(assignment, answers_for(assignment))
    assert _labels(assignment) == before


def test_a_refused_reading_is_no_use(local_batch, annotators, tmp_path):
    """A dataset refused before it read anything (a bad licence) records no use: the correction goes on."""
    from annotation.models import AnswerUse
    from core.errors import ServiceError
    from publishing.services.dataset import publish_dataset

    assignment = _submit_wrong(annotators[0])
    with pytest.raises(ServiceError):
        publish_dataset(local_batch, tmp_path / "dataset", "no-such-licence")
    assert not AnswerUse.objects.exists()
    correct_assignment(assignment, answers_for(assignment))
    assert _labels(assignment) != {}


@pytest.mark.parametrize("action", ["A report on its labels", "A paper bundle", "A routing", "A label-sensitivity run"])
def test_every_reading_that_publishes_or_decides_refuses_a_later_correction(local_batch, annotators, action):
    """The reading every such service goes through (annotation.services.reading_answers), on the batch
    its answers add to as well; and while it reads, a correction is refused as under way."""
    from annotation.services import reading_answers

    assignment = _submit_wrong(annotators[0])
    parent = _parent(local_batch)
    local_batch.refresh_from_db()
    with reading_answers(parent, action), pytest.raises(NotCorrectable, match="being used right now"):
        correct_assignment(assignment, answers_for(assignment))
    with pytest.raises(NotCorrectable, match=f"already used \\({action[:1].lower()}{action[1:]}\\)"):
        correct_assignment(assignment, answers_for(assignment))
