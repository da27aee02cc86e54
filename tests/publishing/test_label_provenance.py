"""Where each published label came from (issue 43): a machine-first batch whose labels were made by
a machine, the site's own annotators, the crowd and a researcher's ruling. Every row's attribution in
the Parquet file (and so in croissant.json's ``prov:wasAttributedTo``) is checked against the
platform's records read here directly (rulings, usable judgments and their batches' providers, the
routing's accepted queries and the machine's pre-labels), and the card states the same counts and the
same money as the batch page."""

from __future__ import annotations

import json
import re

import pytest
from django.urls import reverse

from annotation import services
from annotation.exports.services import export_queries
from annotation.machine.services.calibration import create_calibration_sample
from annotation.machine.services.routing import route_batch
from annotation.models import Adjudication, Batch, Judgment, PreLabel
from annotation.quality.services.adjudication import adjudicate
from platforms.inhouse.services.simulation import simulate_local_annotations
from publishing.services.dataset import publish_dataset
from publishing.tables import CLASS_NAMES
from tests.annotation.machine.test_calibration_flow import answer_sample_until_in, machine_batch  # noqa: F401


@pytest.fixture
def four_sources(machine_batch, researcher):  # noqa: F811
    """The calibration sample answered in-house; routing accepts the machine's confident labels; the
    routed rest answered and then recorded on MTurk (a crowd batch); one routed query ruled on."""
    sample = create_calibration_sample(machine_batch, 60, seed=1)
    services.publish_batch(sample)
    simulate_local_annotations(sample, annotators=4, accuracy=0.95, seed=2)
    answer_sample_until_in(machine_batch)  # routing waits for the sample's escalations (issue 58)
    routing = route_batch(machine_batch, 0.9, risk=None)
    routed = routing.routed_batch
    services.publish_batch(routed)
    simulate_local_annotations(routed, annotators=4, accuracy=0.9, seed=3)
    Batch.objects.filter(pk=routed.pk).update(provider="mturk")  # its votes are the crowd's
    ruled = sorted(routed.queries.filter(is_gold=False).values_list("qid", flat=True))[0]
    adjudicate(machine_batch, ruled, "o", "a ruling for the test", researcher)
    return machine_batch, routing, sample, routed


def _expected_all(batch, routing, sample, routed) -> dict[str, dict]:
    """Who made each query's label, read from the records (not from the code under test): one query per
    table, so that PostgreSQL's planner, which sees no statistics inside a test's transaction, is not
    asked a join per query."""
    batches = [batch, sample, routed]
    ruled = set(Adjudication.objects.filter(batch_query__batch__in=batches).values_list("batch_query__qid", flat=True))
    votes = (
        Judgment.objects.filter(batch_query__batch__in=batches, label__isnull=False)
        .exclude(assignment__gold_passed=False)
        .filter(assignment__status__in=["submitted", "approved"])
        .order_by()
    )
    providers: dict[str, set[str]] = {}
    for qid, provider in votes.values_list("batch_query__qid", "assignment__hit__batch__provider"):
        providers.setdefault(qid, set()).add(provider)
    prelabels = {
        p.batch_query.qid: p
        for p in PreLabel.objects.filter(
            batch_query__batch=batch,
            labeller=routing.labeller,
            model=routing.model,
            prompt_version=routing.prompt_version,
        ).select_related("batch_query")
    }
    expected: dict[str, dict] = {}
    for qid in set(batch.queries.values_list("qid", flat=True)) | set(providers) | ruled:
        if qid in ruled:
            expected[qid] = {"labelled_by": "adjudicator"}
        elif providers.get(qid):
            expected[qid] = {"labelled_by": "in-house" if providers[qid] == {"local"} else "crowd"}
        elif qid in routing.accepted:
            prelabel = prelabels[qid]
            expected[qid] = {
                "labelled_by": "machine",
                "machine_labeller": prelabel.labeller,
                "machine_model": prelabel.model,
                "prompt_version": prelabel.prompt_version,
                "label": prelabel.label,
            }
    return expected


@pytest.mark.slow
def test_every_label_is_attributed_as_the_records_say(four_sources, tmp_path):
    import pyarrow.parquet as pq

    batch, routing, sample, routed = four_sources
    out = tmp_path / "mach"
    publish_dataset(batch, out, "cc-by-4.0")
    rows = pq.read_table(out / "queries.parquet").to_pylist()
    seen = set()
    expected = _expected_all(batch, routing, sample, routed)
    for row in rows:
        want = expected.get(row["qid"])
        if row["label"] is None:  # set aside (too few votes or a tie): attributed to no one
            assert row["labelled_by"] is None and row["machine_labeller"] is None
            continue
        assert want is not None, row
        seen.add(want["labelled_by"])
        assert row["labelled_by"] == want["labelled_by"], row["qid"]
        if want["labelled_by"] == "machine":
            assert (row["machine_labeller"], row["machine_model"], row["prompt_version"]) == (
                want["machine_labeller"],
                want["machine_model"],
                want["prompt_version"],
            )
            assert CLASS_NAMES[row["label"]] == want["label"]
            assert row["label_guarantee"].startswith("no guarantee (point estimate")  # routed with risk=None
        else:
            assert row["machine_labeller"] is row["machine_model"] is row["prompt_version"] is None
            assert row["label_guarantee"] is None
    assert seen == {"machine", "in-house", "crowd", "adjudicator"}

    # croissant.json says each label is attributed row by row, from those very columns; mlcroissant reads it.
    doc = json.loads((out / "croissant.json").read_text())
    queries = next(rs for rs in doc["recordSet"] if rs["@id"] == "queries")
    label = next(f for f in queries["field"] if f["name"] == "label")
    assert label["dataType"] == ["sc:Integer", "cr:Label"]
    assert label["references"] == {"field": {"@id": "label_classes/index"}}
    attributed = label["annotation"]
    assert attributed["equivalentProperty"] == "prov:wasAttributedTo" and doc["@context"]["prov"].startswith("http")
    assert [f["source"]["extract"]["column"] for f in attributed["subField"]] == [
        "labelled_by",
        "machine_labeller",
        "machine_model",
        "prompt_version",
        "label_guarantee",
    ]
    mlc = pytest.importorskip("mlcroissant")
    dataset = mlc.Dataset(jsonld=str(out / "croissant.json"))
    assert not dataset.metadata.ctx.issues.errors
    read = [r["queries/labelled_by"] for r in dataset.records(record_set="queries")]
    assert [v.decode() if isinstance(v, bytes) else v for v in read] == [row["labelled_by"] for row in rows]


def _number(pattern: str, text: str) -> str:
    match = re.search(pattern, text)
    assert match, pattern
    return match.group(1)


@pytest.mark.slow
def test_the_machine_first_card_states_the_batch_pages_counts_and_money(four_sources, researcher, client, tmp_path):
    import yaml

    batch, routing, _, _ = four_sources
    publish_dataset(batch, tmp_path / "mach", "cc-by-4.0")
    readme = (tmp_path / "mach" / "README.md").read_text()
    client.force_login(researcher)
    page = client.get(reverse("annotation:batch-live", args=[batch.name])).content.decode()

    def card(pattern):
        return _number(pattern, readme)

    def shown(element_id):
        return _number(rf'id="{element_id}">\$?([0-9.]+)</div>', page)

    opening = readme.split("\n# ", 1)[1].split("\n")[2]  # the paragraph under the title
    assert card(r"Spent on annotation: \$([0-9.]+) ") == shown("spent")
    assert _number(r"^(\d+) queries annotated", opening) == shown("query-count")
    machine = _number(r"(\d+) \([0-9.]+%\) by a machine labeller", opening)
    assert machine == shown("machine-accepted") == str(len(routing.accepted)) != "0"
    people = sum(
        int(_number(rf"(\d+) \([0-9.]+%\) by {re.escape(who)}", opening))
        for who in ("a majority of in-house annotators", "a majority of crowd workers", "a researcher's ruling")
    )
    assert str(people) == shown("crowd-labelled")
    labelled = int(_number(r"; (\d+) labelled: ", opening))
    assert str(int(shown("query-count")) - labelled) == shown("unlabelled")
    # Every maker of labels with its share, largest first (a machine-first batch's card says who made most),
    # adding up to the labelled queries.
    shares = [int(n) for n in re.findall(r"(\d+) \([0-9.]+%\) by ", opening)]
    assert len(shares) == 4 and shares == sorted(shares, reverse=True) and sum(shares) == labelled
    assert "$" + card(r"Spent on annotation: \$([0-9.]+) ") in readme and "estimated cost" not in readme
    # The license sentence names the source query set (not a pool or the batch), whose terms apply to the text.
    assert "The query text comes from the query set mq; its own terms of use apply to the text." in readme
    for section in ("## Uses", "## Out-of-scope use", "## Contact", "## Citation", "```bibtex"):
        assert section in readme
    meta = yaml.safe_load(readme.split("---\n")[1])
    assert meta["annotations_creators"] == ["expert-generated", "machine-generated"]

    # The export's card beside a TSV: the same money, and the assignments its crowd batches answered (the
    # page's "answered in its crowd batches"), not the batch's own unpublished HITs ("0 of N").
    export_queries(batch, "all", tmp_path / "mach.tsv")
    export_card = (tmp_path / "mach.tsv.md").read_text()
    assert _number(r"\| spent \(fees and bonuses included\) \| ([0-9.]+) \|", export_card) == shown("spent")
    answered = re.search(r"\| answered assignments \(its crowd batches\) \| (\d+) of (\d+) \|", export_card)
    summary = re.search(r"(\d+) / (\d+) assignments answered in its crowd batches", page)
    assert answered and summary and answered.groups() == summary.groups() and answered.group(1) != "0"
    assert "the crowd alone for all queries (never spent)" in export_card
    assert "estimated at creation" not in export_card


def _one_query_facts() -> dict:
    from tests.publishing.test_publication_guarantees import _facts

    facts = _facts(0)
    facts["batch"]["queries_per_hit"] = 1
    facts["machine"] = None  # a crowd batch
    facts["labels"] |= {
        "queries": 1,
        "labelled": 1,
        "counts": {"n": 1, "f": 0, "m": 0, "o": 0},
        "sources": {"crowd majority": 1},
        "labelled_by": {"crowd": 1, "in-house": 0, "adjudicator": 0, "machine": 0},
    }
    facts["agreement"]["judgments_per_query"] = {"3": 1}
    return facts


def test_one_query_is_one_query_and_the_card_cites_and_describes_the_dataset():
    import yaml

    from annotation.results.selectors.labels import CITATION
    from publishing import hub_card, statements
    from publishing.tables import configs_for

    assert [statements.count(n, "query") for n in (0, 1, 2)] == ["0 queries", "1 query", "2 queries"]
    facts = _one_query_facts()
    configs = configs_for(False)
    text = hub_card.card(
        facts,
        configs,
        {c.name: 1 for c in configs},
        license_id="cc-by-4.0",
        pretty_name="b: 50% & more_queries",
        citation=CITATION,
        published="2026-01-31",
    )
    assert not re.search(r"\b1 queries\b", text) and "1 query annotated" in text
    assert "1 (100.0%) by a majority of participants recruited through Prolific" in text
    assert "Spent on annotation: $12.00 (fees and bonuses included)." in text
    bib = text.split("```bibtex\n", 1)[1].split("```", 1)[0]
    assert bib.startswith("@misc{b_2026,") and r"50\% \& more\_queries" in bib and bib.count("{") == bib.count("}")

    # CITATION.cff: Citation File Format 1.2.0's required keys (cff-version, message, title, authors), a
    # dataset, its date as the schema's pattern, an SPDX license, the method as a structured reference.
    cff = yaml.safe_load(hub_card.citation_cff(facts, "b: queries", "2026-01-31", "cc-by-4.0", CITATION))
    assert cff["cff-version"] == "1.2.0" and cff["message"] and cff["title"] == "b: queries"
    assert cff["type"] == "dataset" and all(a.get("name") or a.get("family-names") for a in cff["authors"])
    assert re.fullmatch(r"[0-9]{4}-(0[1-9]|1[012])-(0[1-9]|[12][0-9]|3[01])", str(cff["date-released"]))
    assert cff["license"] == "CC-BY-4.0" and cff["abstract"] == statements.summary(facts)
    (method,) = cff["references"]
    assert {"type", "title", "authors"} <= method.keys() and method["doi"] == "10.1145/3397271.3401280"
    other = yaml.safe_load(hub_card.citation_cff(facts, "b", "2026-01-31", "other", CITATION))
    assert "license" not in other  # a name the SPDX list lacks is left out, not made up

    zenodo = hub_card.zenodo_json(facts, "b: queries", "2026-01-31", "cc-by-4.0")
    assert zenodo["upload_type"] == "dataset" and zenodo["creators"][0]["name"]
    assert zenodo["license"] == "cc-by-4.0" and zenodo["publication_date"] == "2026-01-31"
    assert zenodo["notes"] == statements.source_terms(facts)
