"""The calibration report's alt-test and crowd-reliability figures, read from a real sample's records."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from annotation import services
from annotation.crowd.services.batches import read_gold_file
from annotation.machine.report.selectors import calibration_report
from annotation.machine.selectors import identity_for, machine_labels
from annotation.machine.services.calibration import create_calibration_sample
from annotation.machine.services.prelabels import prelabel_batch
from annotation.models import Batch
from annotation.results.selectors.labels import BatchAnswers
from platforms.inhouse.services.simulation import simulate_local_annotations
from pooling.models import QuerySet
from pooling.services import create_query_set
from tests.annotation.conftest import make_batch
from tests.annotation.machine.test_calibration_flow import NoisyMachine, _texts
from tests.support.kept_state import kept


def _answered(folder) -> tuple[Batch, Batch]:
    """A machine-labelled batch whose 60-query sample three noisy annotators answered (many splits)."""
    query_set = create_query_set("mq", _texts(), origin=QuerySet.Origin.IMPORTED)
    batch = make_batch(query_set, name="mach", assignments_per_query=3, queries_per_hit=5)
    prelabel_batch(batch, NoisyMachine())
    sample_batch = create_calibration_sample(batch, 60, seed=1, extendable=True)
    services.publish_batch(sample_batch)
    simulate_local_annotations(sample_batch, annotators=3, accuracy=0.55, seed=2)
    return batch, sample_batch


#: Built once for the module, each test in a savepoint of it (tests/support/kept_state.py).
_kept_answered, answered = kept("answered", _answered)


def test_the_alt_test_uses_every_sampled_query_with_two_votes_disputed_ones_too(answered):
    batch, sample_batch = answered
    answers = BatchAnswers(sample_batch)
    votes = answers.votes
    disputed = [q for q in votes.index if votes.loc[q, "disputed"]]
    assert disputed, "the simulated crowd should split on some queries"
    machine = machine_labels(batch, identity_for(batch))
    frame = answers.frame
    per_worker = Counter(
        str(worker)
        for item, worker in zip(frame["item"], frame["worker"], strict=True)
        if (frame["item"] == item).sum() >= 2 and item in machine
    )
    report = calibration_report(batch, bootstrap=0)
    alt = report["alt_test"]
    # Every one of the 60 sampled queries had three votes: all 60 are in the test, not only the n labelled.
    assert alt["items"] == 60 > report["n"] == 60 - len(disputed)
    assert {row["annotator"]: row["items"] for row in alt["annotators"]} == dict(per_worker)
    assert alt["sample_size"] == 60


def test_the_report_measures_the_machine_against_the_truth_too(answered):
    batch, sample_batch = answered
    report = calibration_report(batch, bootstrap=200)
    truth = report["against_truth"]
    assert truth["items"] == 60 and truth["votes_per_query"] == 3
    low, high = truth["accuracy_true_ci"]
    assert 0 <= low <= truth["accuracy_true"] <= high <= 1
    assert 0 < truth["self_agreement"] <= truth["ceiling"] <= 1
    assert sum(truth["class_shares"].values()) == pytest.approx(1.0)
    # The machine is NoisyMachine: its stored detail holds the true label (the simulation's oracle), so
    # the machine's real accuracy on the sample is known: weighted as the report weights the strata.
    machine = machine_labels(batch, identity_for(batch))
    derivation = sample_batch.derivation
    population = {s["label"]: s["population"] for s in derivation["strata"]}
    per_stratum = Counter(derivation["stratum_of"].values())
    from annotation.models import PreLabel

    oracle = dict(PreLabel.objects.filter(batch_query__batch=batch).values_list("batch_query__qid", "detail"))
    weights = {q: population[s] / per_stratum[s] for q, s in derivation["stratum_of"].items()}
    right = {q: machine[q].label == oracle[q]["truth"] for q in weights}
    true_accuracy = sum(weights[q] * right[q] for q in weights) / sum(weights.values())
    # A crowd right 55% of the time on three votes, 60 items: one draw, so only "near" the machine's true
    # accuracy (whether it is nearer than agreement with the crowd majority is a property over draws:
    # test_crowd_reliability's simulation, where it holds in >= 80% of them; on this draw, since the sample
    # became one permutation of the population, it is not: 0.575 (held-out posteriors; 0.596 in sample)
    # and 0.642 against 0.729).
    assert abs(truth["accuracy_true"] - true_accuracy) < 0.16


@pytest.mark.slow
def test_command_api_and_page_show_the_same_figures_with_full_label_names(
    answered, researcher, client, django_capture_on_commit_callbacks
):
    import json
    from io import StringIO

    from django.core.management import call_command
    from django.urls import reverse
    from django.utils.html import escape

    from genderbias.labels import LABEL_NAMES

    batch, _ = answered
    out = StringIO()
    call_command("calibration", batch.name, "--json", stdout=out)  # 2000 resamples, as the API and the page
    from_command = json.loads(out.getvalue())
    client.force_login(researcher)
    with django_capture_on_commit_callbacks(execute=True):  # the first ask starts the report's job: 202
        assert client.get(f"/api/annotation/batches/{batch.name}/calibration/").status_code == 202
    from_api = client.get(f"/api/annotation/batches/{batch.name}/calibration/").json()
    for key in ("against_truth", "alt_test", "accuracy"):
        assert from_api[key] == from_command[key], key
    truth, alt = from_api["against_truth"], from_api["alt_test"]

    page = client.get(reverse("annotation:batch-calibration", args=[batch.name])).content.decode()
    assert f'id="accuracy-true">{truth["accuracy_true"]:.3f}<' in page
    assert f'id="ceiling">{truth["ceiling"]:.3f}<' in page
    assert f'id="self-agreement">{truth["self_agreement"]:.3f}<' in page
    # The de-noised figure's assumption, tested on the gold questions: this batch has none, and says so.
    from genderbias.crowd.shared_errors import shared_errors_sentence

    assert truth["shared_errors"]["questions"] == 0
    said = shared_errors_sentence(truth["shared_errors"])
    assert said.startswith("assumption not tested") and f'id="shared-errors">{escape(said)}<' in page
    # The crowd-quality check of the same fit, beside it: 3 annotators of accuracy 0.55 on 60 queries.
    from genderbias.crowd.reliability import quality_sentence

    checked = quality_sentence(truth["quality"])
    assert truth["quality"]["workers"] == 4  # three annotators and the machine
    assert checked.startswith("WARNING") == truth["quality"]["warning"]
    assert f'id="denoised-quality">{escape(checked)}<' in page
    # Three annotators answered everything: the alt-test is informative and the page gives its verdict.
    assert alt["informative"] and f'id="alt-passed">{alt["verdict"].capitalize()}<' in page
    # Full label names, never the codes, in the tables of the report.
    for table in ("confusion", "per-category", "crowd-vote", "proportions"):
        start = page.index(f'<table id="{table}"')
        body = page[start : page.index("</table>", start)]
        assert all(f'<th scope="row">{name}</th>' in body for name in LABEL_NAMES.values()), table
        assert '<th scope="row">n</th>' not in body and '<th class="num">o</th>' not in body

    text = StringIO()
    call_command("calibration", batch.name, "--bootstrap", "200", stdout=text)
    printed = text.getvalue()
    assert f"de-noised)  {truth['accuracy_true']:.3f}" in printed and "Other or multiple genders" in printed
    assert f"  {said}\n" in printed and f"  {checked}\n" in printed
    assert f"winning rate {alt['winning_rate']:.2f}: {alt['verdict']}." in printed
    assert from_command["label_names"] == LABEL_NAMES


def test_gold_questions_seed_the_crowds_reliability(db, tmp_path):
    from annotation.models import Judgment

    gold_file = tmp_path / "gold.tsv"
    gold_file.write_text("gold1\twhat is a mother\tf\ngold2\twhat is a father\tm\n")
    query_set = create_query_set("mq", _texts(), origin=QuerySet.Origin.IMPORTED)
    batch = services.create_batch(
        "mach",
        services.BatchSettings(
            provider="local", assignments_per_query=3, queries_per_hit=5, gold_per_hit=2, gold_pass_fraction=0.5
        ),
        query_set=query_set,
        gold=read_gold_file(gold_file),
    )
    prelabel_batch(batch, NoisyMachine())
    sample_batch = create_calibration_sample(batch, 40, seed=3)
    services.publish_batch(sample_batch)
    simulate_local_annotations(sample_batch, annotators=4, accuracy=0.8, seed=4)
    counted = list(
        Judgment.objects.filter(batch_query__batch=sample_batch, batch_query__is_gold=True, label__isnull=False)
        .exclude(assignment__gold_passed=False)
        .values_list("batch_query__qid", "assignment_id")
    )
    # Every worker met both gold questions in every HIT it took: each answer is an item of its own.
    assert len(counted) > len({qid for qid, _ in counted}) * 4
    truth = calibration_report(batch, bootstrap=0)["against_truth"]
    assert truth["gold"] == len(counted)
    from annotation.machine.report.selectors import _gold_votes

    frame, gold = _gold_votes([sample_batch])
    assert len(frame) == len(counted) and not frame.duplicated(["item", "worker"]).any()
    assert gold == {f"gold:{qid}:{assignment}": {"gold1": "f", "gold2": "m"}[qid] for qid, assignment in counted}
    # The de-noised accuracy's assumption tested on the gold questions (issue 58, item 3): the crowd's
    # error share on each, and the machine's own label of it (pre-labelling labels the gold questions too).
    from annotation.models import PreLabel

    known = {"gold1": "f", "gold2": "m"}
    machine = dict(PreLabel.objects.filter(batch_query__batch=batch, batch_query__is_gold=True).values_list(
        "batch_query__qid", "label"))  # fmt: skip
    assert set(machine) == set(known)
    labels = Judgment.objects.filter(batch_query__batch=sample_batch, batch_query__is_gold=True, label__isnull=False)
    labels = labels.exclude(assignment__gold_passed=False).values_list("batch_query__qid", "label")
    share = {q: np.mean([label != known[q] for qid, label in labels if qid == q]) for q in known}
    wrong = [q for q in known if machine[q] != known[q]]
    right = [q for q in known if machine[q] == known[q]]
    shared = truth["shared_errors"]
    assert shared["questions"] == 2 and shared["machine_wrong"] == len(wrong)
    assert shared["testable"] is bool(wrong and right)
    if wrong:
        assert shared["crowd_error_machine_wrong"] == pytest.approx(np.mean([share[q] for q in wrong]))
    if right:
        assert shared["crowd_error_machine_right"] == pytest.approx(np.mean([share[q] for q in right]))
    # One question of each label: a single arrangement within the labels, so p = 1 when testable.
    assert shared["p"] == (1.0 if shared["testable"] else None)


def test_after_an_extension_the_alt_test_and_the_truth_figures_use_the_whole_sample(answered):
    # 60 drawn first, 25 more by an extension: every figure is of the 85, as the agreement figures are.
    batch, _ = answered
    extension = create_calibration_sample(batch, 25, extend=True)
    services.publish_batch(extension)
    simulate_local_annotations(extension, annotators=3, accuracy=0.55, seed=3)
    report = calibration_report(batch, bootstrap=0)
    assert report["sample_batch"] == extension.name
    assert report["n"] + report["pending"] > 60  # the agreement figures merge the chain
    assert report["alt_test"]["sample_size"] == 85 and report["alt_test"]["items"] == 85
    assert report["against_truth"]["items"] == 85


@pytest.mark.slow
def test_the_page_computes_the_report_once_for_every_worker_and_again_after_a_new_answer(
    answered, researcher, client, monkeypatch, django_capture_on_commit_callbacks
):
    """The report (a 2,000-resample bootstrap, the alt-test, PPI++) is computed by its job and kept in
    the shared results cache under the sample's version (issue 31, issue 57): a new worker (here: the
    per-process cache emptied) reads it, never computes it again; a new answer in the sample is a new
    version."""
    from django.core.cache import cache
    from django.urls import reverse

    from annotation.machine.services import background

    batch, sample_batch = answered
    computed = []
    original = background.calibration_report
    monkeypatch.setattr(background, "calibration_report", lambda *a, **k: computed.append(1) or original(*a, **k))
    client.force_login(researcher)
    url = reverse("annotation:batch-calibration", args=[batch.name])

    def report_part(page: str) -> str:  # the page without its per-request token
        return page[page.index("<main") :]

    def shown() -> str:
        with django_capture_on_commit_callbacks(execute=True):  # the job a first view starts, at its commit
            client.get(url)
        return report_part(client.get(url).content.decode())

    first = shown()
    cache.clear()  # what a new process has: nothing of its own
    assert report_part(client.get(url).content.decode()) == first and len(computed) == 1
    # A ruling on a sampled query changes the sample's version: the report is computed again.
    from annotation.quality.services.adjudication import adjudicate

    qid = sample_batch.queries.filter(is_gold=False).order_by("position").first().qid
    adjudicate(sample_batch, qid, "o", "a ruling after the first view", researcher)
    again = shown()
    assert len(computed) == 2 and again != first
