"""The published dataset folder (publish_dataset): Parquet configurations the Hub's `datasets` loads
offline, a README whose YAML header follows the Hub's card conventions, and croissant.json that
mlcroissant validates and reads back as the Parquet rows."""

import json
import re

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from annotation.models import Batch
from annotation.quality.services.adjudication import adjudicate
from annotation.results.selectors.labels import query_results
from core.errors import ServiceError
from genderbias.labels import LABEL_NAMES
from publishing.services.dataset import publish_dataset
from publishing.tables import CLASS_NAMES as CLASSES
from publishing.tables import CONFIGS
from tests.annotation.results.test_export import _annotate
from tests.support.kept_state import kept


def _annotated(folder):
    """Two votes per query; ann-b disagrees on 104 (o vs f: disputed) and on 106 (m vs f), and a
    researcher rules 106 female. 101 and 105 are Non-gendered."""
    local_batch, users = Batch.objects.get(name="b1"), get_user_model().objects
    _annotate(
        local_batch, [users.get(username=name) for name in ("ann-a", "ann-b")], {"ann-b": {"104": "f", "106": "m"}}
    )
    adjudicate(local_batch, "106", "f", "about women", users.get(username="researcher"))
    return local_batch


#: Built once for the module, each test in a savepoint of it (tests/support/kept_state.py).
_kept_annotated, annotated = kept("annotated", _annotated, after=("local_batch", "annotators", "researcher"))


@pytest.fixture
def offline_hf(tmp_path, monkeypatch):
    """The `datasets` library offline, with its cache in the test's folder (nothing reaches the Hub)."""
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    return tmp_path / "hf-cache"


def _load(folder, config, cache):
    from datasets import load_dataset

    return load_dataset(str(folder), name=config, cache_dir=str(cache))["train"].to_list()


def _header(readme: str) -> str:
    match = re.match(r"^---\n(.*?)\n---\n", readme, re.S)
    assert match, "the card starts with a YAML block"
    return match.group(1)


@pytest.mark.slow
def test_every_configuration_loads_offline_and_equals_the_database(annotated, tmp_path, offline_hf):
    out = tmp_path / "gq-dataset"
    publication = publish_dataset(annotated, out, "cc-by-4.0", with_judgments=True)
    assert sorted(publication.files) == sorted(
        [
            "queries.parquet",
            "non_gendered.parquet",
            "aggregated.parquet",
            "judgments.parquet",
            "README.md",
            "croissant.json",
            "CITATION.cff",
            ".zenodo.json",
        ]
    )
    from datasets import ClassLabel, load_dataset

    for config in ("queries", "non_gendered", "judgments"):  # a four-class label, as the Parquet declares it
        feature = load_dataset(str(out), name=config, cache_dir=str(offline_hf))["train"].features["label"]
        assert isinstance(feature, ClassLabel) and feature.names == ["n", "f", "m", "o"]
    results = query_results(annotated)
    by_qid = {r["qid"]: r for r in results}

    queries = _load(out, "queries", offline_hf)
    assert [row["qid"] for row in queries] == [r["qid"] for r in results] == ["101", "102", "103", "104", "105", "106"]
    for row in queries:
        r = by_qid[row["qid"]]
        assert row["query"] == r["query"] and row["label"] == (CLASSES.index(r["label"]) if r["label"] else None)
        assert row["label_source"] == r["label_source"] and row["adjudicated"] == r["adjudicated"]
        assert row["label_name"] == (LABEL_NAMES[r["label"]] if r["label"] else None)
        expected = r["ds_posteriors"][r["label"]] if r["label"] else None
        assert row["ds_posterior"] == pytest.approx(expected) if expected is not None else row["ds_posterior"] is None
    statuses = {row["qid"]: (row["status"], row["label"], row["label_source"]) for row in queries}
    assert statuses["104"] == ("disputed", None, None)  # set aside, kept, never labelled
    assert statuses["106"] == ("labelled", CLASSES.index("f"), "adjudicated")
    assert next(row for row in queries if row["qid"] == "106")["crowd_label"] is None  # 1-1 before the ruling

    non_gendered = _load(out, "non_gendered", offline_hf)
    assert [row["qid"] for row in non_gendered] == ["101", "105"]
    assert non_gendered == [row for row in queries if row["label"] == CLASSES.index("n")]

    aggregated = {row["qid"]: row for row in _load(out, "aggregated", offline_hf)}
    assert aggregated["104"] | {} == aggregated["104"]
    assert (aggregated["104"]["votes"], aggregated["104"]["votes_o"], aggregated["104"]["votes_f"]) == (2, 1, 1)
    assert aggregated["104"]["agreement"] == 0.5 and aggregated["104"]["disputed"] is True
    assert aggregated["101"]["agreement"] == 1.0 and aggregated["101"]["majority_label"] == "n"
    for qid, row in aggregated.items():
        assert row["votes"] == len(by_qid[qid]["votes"]) == sum(row[f"votes_{c}"] for c in "nfmo")

    judgments = _load(out, "judgments", offline_hf)
    assert len(judgments) == sum(len(r["votes"]) for r in results) == 12
    assert {row["annotator"] for row in judgments} == {"annotator-001", "annotator-002"}
    platform = {v["worker"] for r in results for v in r["votes"]}
    assert not platform & {row["annotator"] for row in judgments}  # the platform's pseudonyms stay in
    # The same annotator keeps one pseudonym: ann-b is the one who said f on 104.
    ann_b = next(row["annotator"] for row in judgments if row["qid"] == "104" and row["label_name"] == "Female")
    assert {(row["qid"], CLASSES[row["label"]]) for row in judgments if row["annotator"] == ann_b} >= {
        ("104", "f"),
        ("106", "m"),
    }


def test_the_card_header_follows_the_hub_conventions(annotated, tmp_path):
    out = tmp_path / "folder"
    publish_dataset(annotated, out, "cc-by-nc-4.0")
    readme = (out / "README.md").read_text()
    yaml = pytest.importorskip("yaml")
    meta = yaml.safe_load(_header(readme))
    assert meta["license"] == "cc-by-nc-4.0" and meta["language"] == ["en"]
    assert meta["annotations_creators"] == ["expert-generated"]  # in-house annotators and a ruling, no machine
    assert meta["task_categories"] == ["text-classification"] and meta["size_categories"] == ["n<1K"]
    assert meta["source_datasets"] == ["original"]  # a file of the user's, not an ir_datasets collection
    configs = {c["config_name"]: c for c in meta["configs"]}
    assert list(configs) == ["queries", "non_gendered", "aggregated"]  # no judgments unless asked
    assert configs["queries"]["default"] is True
    assert configs["aggregated"]["data_files"] == [{"split": "train", "path": "aggregated.parquet"}]
    assert not (out / "judgments.parquet").exists()
    body = readme.split("---\n", 2)[2]
    # The study's facts: agreement with its interval, set-aside queries and why, the ruling, the pay.
    assert "Krippendorff's alpha (nominal)" in body and "bootstrap interval" in body
    assert "Set aside: 1 queries disputed" in body and "(rulings: 1)" in body  # one ruling
    # In-house: the reward setting is nominal, never "paid" (issue 54); who saw each query, from the answers.
    assert "a nominal reward of $0.05 per task, which the platform does not pay" in body and "paid $0.05" not in body
    assert "2 annotators" in body
    assert "Non-gendered share among labelled queries 0.400" in body  # 2 of 5 labelled
    assert "rai:dataSocialImpact" in body and "judgments are not included" in body


def test_a_machine_free_folder_is_replaced_only_when_it_is_ours(annotated, tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(ServiceError, match=r"did not write: notes\.txt"):
        publish_dataset(annotated, tmp_path / "mine", "mit")
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"
    out = tmp_path / "again"
    publish_dataset(annotated, out, "mit", with_judgments=True)
    publish_dataset(annotated, out, "mit")  # a second publication replaces the first, whole
    assert not (out / "judgments.parquet").exists() and (out / "queries.parquet").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no staging left behind
    with pytest.raises(ServiceError, match="does not exist"):
        publish_dataset(annotated, tmp_path / "no" / "such", "mit")
    with pytest.raises(ServiceError, match="choose one of"):
        publish_dataset(annotated, tmp_path / "x", "cc-by-5.0")


def test_the_command_requires_a_license_and_lists_what_is_left(annotated, tmp_path, capsys):
    with pytest.raises(CommandError, match="--license"):
        call_command("publish_dataset", annotated.name, "--out", str(tmp_path / "d"))
    call_command("publish_dataset", annotated.name, "--out", str(tmp_path / "d"), "--license", "cc0-1.0")
    out = capsys.readouterr().out
    assert "Wrote the dataset folder" in out and "queries 6, non_gendered 2, aggregated 6" in out
    assert "rai:dataReleaseMaintenancePlan" in out
    assert f"hf upload OWNER/NAME {tmp_path / 'd'} . --repo-type dataset" in out
    assert json.loads((tmp_path / "d" / "croissant.json").read_text())["license"] == "cc0-1.0"


def test_the_command_is_quiet_with_verbosity_0(annotated, tmp_path, capsys):
    call_command("publish_dataset", annotated.name, "--out", str(tmp_path / "q"), "--license", "mit", "-v", "0")
    assert capsys.readouterr() == ("", "")  # issue 45: -v 0 prints nothing
    assert (tmp_path / "q" / "croissant.json").exists()


def test_configs_declare_a_text_qid():
    for config in CONFIGS.values():
        assert config.columns[0].name == "qid" and config.columns[0].arrow == "string"


def test_source_datasets_name_the_collection_the_queries_came_from(db, tmp_path):
    from pooling.models import QuerySet
    from pooling.services import create_query_set
    from tests.annotation.conftest import make_batch

    query_set = create_query_set(
        "dev",
        [("1", "what is a synapse")],
        origin=QuerySet.Origin.IMPORTED,
        source="ir_datasets:msmarco-passage/dev/small (ir_datasets 0.5.9)",
    )
    batch = make_batch(query_set, name="irds")
    yaml = pytest.importorskip("yaml")
    publish_dataset(batch, tmp_path / "d", "mit")
    meta = yaml.safe_load(_header((tmp_path / "d" / "README.md").read_text()))
    assert meta["source_datasets"] == ["extended|msmarco-passage/dev/small"]
    assert meta["annotations_creators"] == ["expert-generated"]  # in-house annotators; nothing labelled yet
    readme = (tmp_path / "d" / "README.md").read_text()
    assert not re.search(r"\b1 queries\b", readme) and "1 query annotated" in readme
    origin = "dev (queries from ir_datasets:msmarco-passage/dev/small (ir_datasets 0.5.9))"
    assert f"The query text comes from the query set {origin}; its own terms of use apply" in readme


def test_the_text_is_under_the_source_query_sets_terms_not_the_pools(db):
    from types import SimpleNamespace

    from annotation.exports.selectors import source_of, source_query_set
    from pooling.models import QuerySet
    from pooling.services import create_query_set

    query_set = create_query_set("robust", [("1", "q")], origin=QuerySet.Origin.IMPORTED, source="ir_datasets:x (y)")
    pooled = SimpleNamespace(pool=SimpleNamespace(name="top-biased", source=query_set), query_set=None)
    assert source_of(pooled) == "top-biased (queries from ir_datasets:x (y))"  # what the batch annotates
    assert source_query_set(pooled) == "robust (queries from ir_datasets:x (y))"  # whose terms the text is under


@pytest.mark.slow
def test_the_cards_splits_are_whole_so_datasets_loads_them_without_a_warning(annotated, tmp_path, offline_hf, caplog):
    """``datasets`` ignores a ``splits`` entry missing name, num_examples or num_bytes, with a warning per
    configuration (three per load, issue 54); each split now states all three, and its num_bytes is
    the figure ``datasets`` computes itself when it prepares the split."""
    import logging

    import yaml
    from datasets import load_dataset

    out = tmp_path / "gq-dataset"
    publish_dataset(annotated, out, "cc-by-4.0")
    meta = yaml.safe_load(_header((out / "README.md").read_text()))
    caplog.set_level(logging.WARNING, logger="datasets")
    for info in meta["dataset_info"]:
        [split] = info["splits"]
        assert set(split) == {"name", "num_bytes", "num_examples"}
        loaded = load_dataset(str(out), name=info["config_name"], cache_dir=str(offline_hf))["train"]
        assert split["num_examples"] == loaded.num_rows
        assert split["num_bytes"] == loaded.info.splits["train"].num_bytes  # recomputed by `datasets` as it prepares
    ignored = [r.getMessage() for r in caplog.records if r.name.startswith("datasets")]
    assert ignored == []
