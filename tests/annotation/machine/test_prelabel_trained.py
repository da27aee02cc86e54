"""The trained pre-labeller: what it learns and refuses, the labelled-file reader it trains
from, the service and the command (on a file and on a batch's simulated human labels),
and its accuracy on the study's published queries."""

import gzip
import random
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation import services
from annotation.crowd.services.batches import read_labelled_file
from annotation.machine.prelabellers import get_prelabeller
from annotation.machine.prelabellers.trained import MIN_TRAINING, TrainedPreLabeller, training_sha256
from annotation.machine.services.prelabels import make_prelabeller, prelabel_batch
from annotation.models import PreLabel
from annotation.results.export_formats import write_labelled_csv
from core.errors import ServiceError
from genderbias.errors import InputError
from platforms.inhouse.services.simulation import oracle_label, simulate_local_annotations
from pooling.models import QuerySet
from pooling.services import create_query_set
from tests.annotation.conftest import make_batch

FEMALE = ["woman", "mother", "girl", "sister", "daughter", "queen", "wife", "aunt"]
MALE = ["man", "father", "boy", "brother", "son", "king", "husband", "uncle"]
THINGS = ["synapse", "volcano", "mortgage", "printer", "glacier", "recipe", "engine", "comet"]
TEMPLATES = ["what does a {} do", "how old is the average {}", "pictures of a {}", "facts about the {}"]


def toy_set() -> tuple[list[str], list[str]]:
    """96 queries in three classes that a word (hence its character n-grams) decides."""
    texts, labels = [], []
    for words, label in ((FEMALE, "f"), (MALE, "m"), (THINGS, "n")):
        for word in words:
            for template in TEMPLATES:
                texts.append(template.format(word))
                labels.append(label)
    return texts, labels


@pytest.fixture(scope="module")
def toy():
    texts, labels = toy_set()
    return TrainedPreLabeller(texts, labels, "toy")


# -- the classifier ------------------------------------------------------------------------
def test_it_learns_a_separable_set_and_says_how_well(toy):
    assert toy.cv_accuracy > 0.9 and 0 <= toy.cv_accuracy_std < 0.1
    assert (toy.cv_folds, toy.training_size) == (5, 96)
    assert toy.name == "trained" and toy.prompt_version == "trained-v1"
    queries = [("1", "where does my grandmother live"), ("2", "my brother's car"), ("3", "a comet in the sky")]
    got = toy.label(queries)
    assert [p.label for p in got] == ["f", "m", "n"]
    assert got[0].detail == {
        "cv_accuracy": round(toy.cv_accuracy, 4),
        "cv_accuracy_std": round(toy.cv_accuracy_std, 4),
        "cv_folds": 5,
        "trained_on": "toy",
        "training_size": 96,
        "in_training": False,
    }
    assert toy.label([("4", "  What does a  QUEEN do ")])[0].detail["in_training"]  # case and spacing aside
    assert toy.label([]) == []


def test_the_confidence_is_the_predicted_class_probability(toy):
    texts = ["how tall is my uncle", "recipe for pancakes", "is the queen a mother", "xyz"]
    probabilities = toy.pipeline.predict_proba(texts)
    for prediction, row in zip(toy.label([(str(i), t) for i, t in enumerate(texts)]), probabilities, strict=True):
        assert 0 <= prediction.confidence <= 1
        assert prediction.confidence == pytest.approx(row.max())
        assert prediction.label == toy.pipeline.classes_[row.argmax()]


def test_it_is_near_chance_on_shuffled_labels():
    texts, labels = toy_set()
    shuffled = list(labels)
    random.Random(3).shuffle(shuffled)
    labeller = TrainedPreLabeller(texts, shuffled, "shuffled")
    assert labeller.cv_accuracy < 0.5  # chance is 1/3; the real labels give over 0.9


def test_the_model_name_follows_the_training_data(toy):
    texts, labels = toy_set()
    assert toy.model == f"tfidf-char_wb2-5+logreg:toy@{training_sha256(texts, labels)[:12]}"
    assert training_sha256(texts[::-1], labels[::-1]) == training_sha256(texts, labels)  # order does not matter
    relabelled = ["o" if text == texts[0] else label for text, label in zip(texts, labels, strict=True)]
    other = TrainedPreLabeller(texts, relabelled, "toy")
    assert other.model != toy.model and other.model.startswith("tfidf-char_wb2-5+logreg:toy@")


def test_a_small_class_means_fewer_folds_and_an_absent_class_is_never_predicted():
    texts, labels = toy_set()
    texts += ["do boys or girls learn faster", "men and women", "sons and daughters"]
    labels += ["o", "o", "o"]
    labeller = TrainedPreLabeller(texts, labels, "toy+o")
    assert labeller.cv_folds == 3
    assert {p.label for p in labeller.label([(str(i), t) for i, t in enumerate(texts)])} <= {"n", "f", "m", "o"}
    texts, labels = toy_set()
    labeller = TrainedPreLabeller(texts, labels, "toy")
    assert "o" not in labeller.pipeline.classes_


@pytest.mark.parametrize(
    ("texts", "labels", "message"),
    [
        (["a query"] * (MIN_TRAINING - 1), ["n", "f"] * 9 + ["n"], "at least 20"),
        ([f"query {i}" for i in range(30)], ["n"] * 30, "at least two labels"),
        ([f"query {i}" for i in range(30)], ["n", "female"] * 15, "unknown label"),
        (["a", "b"], ["n"], "2 texts but 1 labels"),
    ],
)
def test_too_little_or_bad_training_data_is_refused(texts, labels, message):
    with pytest.raises(ValueError, match=message):
        get_prelabeller("trained", texts=texts, labels=labels, source="bad")


# -- the labelled-file reader ------------------------------------------------------------------
def test_the_reader_takes_tsv_and_the_studys_csv_with_commas_in_queries(tmp_path):
    tsv = tmp_path / "gold.tsv"
    tsv.write_text("g1\twhat is a mother, really\tfemale\n\ng2\twhat is a father\tm\n")
    assert [(q.qid, q.text, q.label) for q in read_labelled_file(tsv)] == [
        ("g1", "what is a mother, really", "f"),
        ("g2", "what is a father", "m"),
    ]
    csv_file = tmp_path / "study.csv.gz"
    csv_file.write_bytes(gzip.compress(b"986563,who was known as the heretic king,m\n7,sun, moon, and stars,n\n"))
    assert [(q.qid, q.text, q.label) for q in read_labelled_file(csv_file)] == [
        ("986563", "who was known as the heretic king", "m"),
        ("7", "sun, moon, and stars", "n"),
    ]
    headed = tmp_path / "headed.txt"  # no .csv: the header says it is CSV
    headed.write_text("qid,query,label\n1,a, b,o\n")
    assert [(q.qid, q.text, q.label) for q in read_labelled_file(headed)] == [("1", "a, b", "o")]


def test_the_reader_takes_the_projects_own_csv_export(tmp_path):
    path = tmp_path / "export.csv"
    rows = [{"qid": "1", "query": 'say "hi", then leave', "label": "n", "adjudicated": False, "ds_posterior": 0.9}]
    write_labelled_csv(rows, path, extra=("adjudicated", "ds_posterior"))
    assert [(q.qid, q.text, q.label) for q in read_labelled_file(path)] == [("1", 'say "hi", then leave', "n")]
    write_labelled_csv(rows, path)
    assert [(q.qid, q.text, q.label) for q in read_labelled_file(path)] == [("1", 'say "hi", then leave', "n")]


@pytest.mark.parametrize(
    ("name", "content", "where", "message"),
    [
        ("t.csv", "1,fine,n\n2,a, b,maybe\n", 2, "unknown label 'maybe'"),
        ("t.csv", "1,fine,n\n\n3,nocomma\n", 3, "expected qid,query,label"),
        ("t.tsv", "1\tfine\tn\n2\tbad\tx\n", 2, "unknown label 'x'"),
        ("t.csv", "qid,query,label,extra\n1,a, b,n,1\n", 2, "expected 4 comma-separated fields, found 5"),
        ("t.csv", "1,a,n\n1,b,f\n", 2, "qid 1 repeated"),
    ],
)
def test_bad_labelled_files_name_the_file_and_line(tmp_path, name, content, where, message):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(InputError) as caught:
        read_labelled_file(path)
    assert str(caught.value).startswith(f"{path}:{where}: ") and message in str(caught.value)


# -- the service and the command ------------------------------------------------------------------
@pytest.fixture
def training_file(tmp_path):
    """The toy set as the study's CSV, with one query of the batch below in it."""
    texts, labels = toy_set()
    path = tmp_path / "toy.csv"
    lines = [f"t{i},{text},{label}" for i, (text, label) in enumerate(zip(texts, labels, strict=True))]
    path.write_text("\n".join([*lines, "t999,what is a synapse,n"]) + "\n")
    return path


@pytest.fixture
def batch(query_set):
    return make_batch(query_set)


def stored(batch):
    return {
        p.batch_query.qid: p
        for p in PreLabel.objects.filter(batch_query__batch=batch, labeller="trained").select_related("batch_query")
    }


def test_the_command_trains_on_a_file_and_a_rerun_replaces_the_rows(batch, training_file, tmp_path):
    out = StringIO()
    call_command("prelabel", batch.name, "--labeller", "trained", "--train", str(training_file), stdout=out)
    text = out.getvalue()
    assert "Cross-validated accuracy: " in text and "(5 folds, 97 training queries)" in text
    assert "6 label(s) stored" in text
    rows = stored(batch)
    assert {qid: row.label for qid, row in rows.items() if qid in {"102", "103", "106"}} == {
        "102": "f",
        "103": "m",
        "106": "f",
    }
    detail = rows["101"].detail
    assert detail["trained_on"] == "toy.csv" and detail["training_size"] == 97 and detail["in_training"] is True
    assert not rows["102"].detail["in_training"]
    assert 0.9 < detail["cv_accuracy"] <= 1 and rows["101"].model.startswith("tfidf-char_wb2-5+logreg:toy.csv@")

    call_command("prelabel", batch.name, "--labeller", "trained", "--train", str(training_file), stdout=StringIO())
    assert PreLabel.objects.filter(labeller="trained").count() == 6  # replaced, not added

    other = tmp_path / "other.tsv"
    texts, labels = toy_set()
    other.write_text("".join(f"x{i}\t{t}\t{label}\n" for i, (t, label) in enumerate(zip(texts, labels, strict=True))))
    summary = prelabel_batch(batch, "trained", train=other)
    assert summary.training_size == 96 and summary.cv_folds == 5 and summary.cv_accuracy > 0.9
    assert PreLabel.objects.filter(labeller="trained").count() == 12  # other data: new labels beside the old
    assert PreLabel.objects.filter(labeller="trained").values("model").distinct().count() == 2


def test_training_data_is_required_by_trained_only(batch, training_file):
    with pytest.raises(ServiceError, match="needs training data"):
        make_prelabeller("trained")
    with pytest.raises(ServiceError, match="rules pre-labeller takes no training data"):
        make_prelabeller("rules", train=str(training_file))
    with pytest.raises(CommandError, match="needs training data"):
        call_command("prelabel", batch.name, "--labeller", "trained", stdout=StringIO())
    with pytest.raises(CommandError, match="no batch named 'nope'"):
        call_command("prelabel", batch.name, "--labeller", "trained", "--train", "batch:nope", stdout=StringIO())
    with pytest.raises(CommandError, match="not found"):
        call_command("prelabel", batch.name, "--labeller", "trained", "--train", "missing.tsv", stdout=StringIO())


def test_the_command_trains_on_a_batchs_human_labels_so_far(db):
    texts, _ = toy_set()
    queries = [(f"q{i}", text) for i, text in enumerate(texts[::2])]  # 48 queries, every class
    query_set = create_query_set("toy", queries, origin=QuerySet.Origin.IMPORTED)
    batch = make_batch(query_set, name="crowd", queries_per_hit=8, reward=Decimal("0.05"))
    with pytest.raises(CommandError, match="only 0 labelled queries"):
        call_command("prelabel", "crowd", "--labeller", "trained", "--train", "batch:crowd", stdout=StringIO())
    services.publish_batch(batch)
    batch.refresh_from_db()
    simulate_local_annotations(batch, annotators=2, accuracy=1.0, seed=1)

    out = StringIO()
    call_command("prelabel", "crowd", "--labeller", "trained", "--train", "batch:crowd", stdout=out)
    assert "(5 folds, 48 training queries)" in out.getvalue()
    rows = stored(batch)
    assert len(rows) == 48 and all(row.detail["in_training"] for row in rows.values())
    assert all(row.detail["trained_on"] == "batch:crowd" for row in rows.values())
    assert all(row.label == oracle_label(row.batch_query.text) for row in rows.values())  # it fits what it saw


# -- the study's published queries ------------------------------------------------------------------------
@pytest.mark.slow
def test_on_the_studys_queries_it_beats_the_majority_class(reference_dir):
    queries = read_labelled_file(reference_dir / "queries_gender_annotated.csv")
    assert len(queries) == 3750
    labeller = TrainedPreLabeller([q.text for q in queries], [q.label for q in queries], "study")
    print(
        f"\ncross-validated accuracy on the study's queries: {labeller.cv_accuracy:.3f} ± {labeller.cv_accuracy_std:.3f}"
    )
    assert labeller.cv_accuracy > 1765 / 3750 + 0.15
