"""croissant.json of a published dataset folder, read by MLCommons' own reader (mlcroissant): it
validates, its RAI fields state the study's facts, and every record set's records are the Parquet rows."""

import json

import pytest

from annotation.exports.selectors import study_facts
from genderbias.files.atomic import file_sha256
from publishing.croissant import CONFORMS_TO, CONTEXT
from publishing.hub_card import RESEARCHER_FIELDS
from publishing.services.dataset import publish_dataset
from publishing.tables import CONFIGS
from tests.publishing.test_dataset_folder import _kept_annotated, annotated  # noqa: F401 (fixture)

#: The one warning mlcroissant gives: the dataset's own citation is the researcher's to write.
CITE_AS = "citeAs"


def _plain(value):
    """mlcroissant hands text back as bytes; the Parquet file (and a reader) has str."""
    return value.decode("utf-8") if isinstance(value, bytes) else value


@pytest.fixture
def folder(annotated, tmp_path):  # noqa: F811
    out = tmp_path / "gq"
    publish_dataset(annotated, out, "cc-by-4.0", with_judgments=True)
    return out


@pytest.mark.slow
def test_mlcroissant_validates_it_and_reads_every_record_set_as_the_parquet_rows(folder):
    mlc = pytest.importorskip("mlcroissant")
    import pyarrow.parquet as pq

    dataset = mlc.Dataset(jsonld=str(folder / "croissant.json"))  # raises on any validation error
    issues = dataset.metadata.ctx.issues
    assert not issues.errors
    assert all(CITE_AS in warning for warning in issues.warnings), issues.warnings
    names = [record_set.name for record_set in dataset.metadata.record_sets]
    assert names == ["label_classes", "queries", "non_gendered", "aggregated", "judgments"]
    # The four classes, in the order of the Parquet files' ClassLabel.
    classes = [
        {k.removeprefix("label_classes/"): _plain(v) for k, v in r.items()} for r in dataset.records("label_classes")
    ]
    assert classes == [
        {"index": 0, "code": "n", "name": "Non-gendered"},
        {"index": 1, "code": "f", "name": "Female"},
        {"index": 2, "code": "m", "name": "Male"},
        {"index": 3, "code": "o", "name": "Other or multiple genders"},
    ]
    for name in names[1:]:
        expected = pq.read_table(folder / CONFIGS[name].file_name).to_pylist()
        records = [
            {key.removeprefix(f"{name}/"): _plain(value) for key, value in record.items()}
            for record in dataset.records(record_set=name)
        ]
        assert len(records) == len(expected) > 0
        for got, want in zip(records, expected, strict=True):
            assert got.keys() == want.keys()
            for column, value in want.items():
                if isinstance(value, float):
                    assert got[column] == pytest.approx(value), (name, column)
                else:
                    assert got[column] == value, (name, column, got[column], value)


def test_files_fields_and_rai_facts(folder, annotated):  # noqa: F811
    doc = json.loads((folder / "croissant.json").read_text())
    assert (
        doc["conformsTo"]
        == CONFORMS_TO
        == [
            "http://mlcommons.org/croissant/1.1",
            "http://mlcommons.org/croissant/RAI/1.0",
        ]
    )
    assert doc["@context"] == CONTEXT and doc["@type"] == "sc:Dataset"
    files = {f["name"]: f for f in doc["distribution"]}
    assert set(files) == {c.file_name for c in CONFIGS.values()}
    for name, entry in files.items():
        assert entry["@type"] == "cr:FileObject" and entry["encodingFormat"] == "application/x-parquet"
        assert entry["sha256"] == file_sha256(folder / name)  # the bytes on disk, not another draw
    queries = next(rs for rs in doc["recordSet"] if rs["name"] == "queries")
    types = {f["name"]: f["dataType"] for f in queries["field"]}
    assert types["qid"] == "sc:Text" and types["adjudicated"] == "sc:Boolean" and types["ds_posterior"] == "sc:Float"
    assert queries["field"][0]["source"] == {"fileObject": {"@id": "queries.parquet"}, "extract": {"column": "qid"}}
    facts = study_facts(annotated)
    assert doc["rai:annotationsPerItem"].startswith("2 annotators per query")
    analysis = doc["rai:dataAnnotationAnalysis"][0]
    low, high = facts["agreement"]["alpha_ci"]
    assert f"[{low:.3f}, {high:.3f}]" in analysis and "1 set aside as disputed" in analysis
    assert "rulings: 1" in doc["rai:dataAnnotationProtocol"][0]
    assert "by in-house annotators" in doc["rai:dataAnnotationPlatform"][0]
    # A crowd batch without screeners or machine: those fields are left out, not filled with guesses.
    assert "rai:annotatorDemographics" not in doc and "rai:machineAnnotationTools" not in doc
    for field in RESEARCHER_FIELDS:
        assert field not in doc
    for field in ("rai:dataCollection", "rai:dataBiases", "rai:dataLimitations", "rai:personalSensitiveInformation"):
        assert doc[field]
    assert doc["rai:dataUseCases"]
