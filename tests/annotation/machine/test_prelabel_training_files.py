"""Training files of the trained labeller (issue 27.11, 27.12): a class of one example gives no
cross-validated accuracy (said so) rather than a NaN the database refuses; the same file
uploaded twice is one machine; uploads are deleted after use; failures name no server path."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.machine.prelabellers.trained import TrainedPreLabeller
from annotation.models import PreLabel
from core.models import Job
from tests.annotation.conftest import make_batch
from tests.annotation.machine.test_prelabel_trained import toy_set


def tsv(texts, labels) -> bytes:
    return "".join(
        f"t{i}\t{text}\t{label}\n" for i, (text, label) in enumerate(zip(texts, labels, strict=True))
    ).encode()


def one_example_set():
    """32 non-gendered queries and one female one: a fold trained without it holds one class."""
    texts, labels = toy_set()
    things = [text for text, label in zip(texts, labels, strict=True) if label == "n"]
    return [*things, "what does a queen do"], ["n"] * len(things) + ["f"]


def test_a_class_of_one_example_gives_no_cv_accuracy_and_says_why():
    labeller = TrainedPreLabeller(*one_example_set(), "toy+1")
    assert labeller.cv_accuracy is None and labeller.cv_folds == 0
    assert (
        labeller.cv_note == "not cross-validated: label 'f' has 1 training query (at least 2 of each label are needed)"
    )
    (prediction,) = labeller.label([("q", "what does a queen do")])
    assert prediction.label in {"n", "f"} and prediction.detail["cv_accuracy"] is None
    assert prediction.detail["cv_note"].startswith("not cross-validated")


def _upload(client, batch, content: bytes, name="train.tsv"):
    upload = SimpleUploadedFile(name, content, content_type="text/tab-separated-values")
    return client.post(
        reverse("annotation:batch-prelabel", args=[batch.name]), {"labeller": "trained", "train_file": upload}
    )


def _uploads() -> list[Path]:
    folder = Path(settings.CACHE_DIR) / "uploads"
    return sorted(folder.iterdir()) if folder.exists() else []


@pytest.mark.slow
def test_an_uploaded_file_with_a_one_example_class_prelabels_and_states_it(
    query_set, researcher, client, django_capture_on_commit_callbacks
):
    batch = make_batch(query_set)
    client.force_login(researcher)
    with django_capture_on_commit_callbacks(execute=True):
        assert _upload(client, batch, tsv(*one_example_set())).status_code == 302
    job = Job.objects.get(kind="annotation.prelabel")
    assert job.status == Job.Status.DONE, job.message
    assert "not cross-validated: label 'f' has 1 training query" in job.message
    assert PreLabel.objects.filter(labeller="trained").count() == batch.queries.count()
    assert _uploads() == []  # the upload is deleted once read


def test_the_same_file_uploaded_twice_is_one_machine(query_set, researcher, client, django_capture_on_commit_callbacks):
    batch = make_batch(query_set)
    client.force_login(researcher)
    content = tsv(*toy_set())
    for _ in range(2):
        with django_capture_on_commit_callbacks(execute=True):
            assert _upload(client, batch, content).status_code == 302
    assert [job.status for job in Job.objects.filter(kind="annotation.prelabel")] == ["done", "done"]
    models = set(PreLabel.objects.filter(labeller="trained").values_list("model", flat=True))
    assert len(models) == 1 and next(iter(models)).startswith("tfidf-char_wb2-5+logreg:train.tsv@")
    assert PreLabel.objects.filter(labeller="trained").count() == batch.queries.count()  # not duplicated
    assert _uploads() == []


def test_a_bad_upload_fails_naming_the_file_not_a_server_path(
    query_set, researcher, client, django_capture_on_commit_callbacks
):
    batch = make_batch(query_set)
    client.force_login(researcher)
    texts, labels = toy_set()
    content = tsv(texts, labels) + b"bad line without tabs\n"
    with django_capture_on_commit_callbacks(execute=True):
        _upload(client, batch, content, name="mine.tsv")
    job = Job.objects.get(kind="annotation.prelabel")
    assert job.status == Job.Status.FAILED
    assert job.message.startswith(f"mine.tsv:{len(texts) + 1}: "), job.message
    assert str(settings.CACHE_DIR) not in job.message and "uploads" not in job.message
    assert _uploads() == []
