"""The Hub card's metadata rules and the RAI sentences that depend on how a batch was run (pure)."""

import pytest

from publishing import hub_card, statements
from publishing.croissant import rai_fields


@pytest.mark.parametrize(
    ("rows", "category"),
    [
        (0, "n<1K"),
        (999, "n<1K"),
        (1000, "1K<n<10K"),
        (9999, "1K<n<10K"),
        (10_000, "10K<n<100K"),
        (2_000_000, "1M<n<10M"),
        (10_000_000, "10M<n<100M"),  # was "n>10M", not a Hub category
        (999_999_999, "100M<n<1B"),
        (5_000_000_000, "1B<n<10B"),
        (99_999_999_999, "10B<n<100B"),
        (100_000_000_000, "100B<n<1T"),
        (1_000_000_000_000, "n>1T"),
    ],
)
def test_size_category_edges(rows, category):
    assert hub_card.size_category(rows) == category


def test_creators_follow_the_provider_and_the_label_sources():
    def facts(provider="mturk", **sources):
        return {"batch": {"provider": provider}, "labels": {"sources": sources}}

    assert hub_card.annotations_creators(facts(**{"crowd majority": 5})) == ["crowdsourced"]
    assert hub_card.annotations_creators(facts("prolific", **{"crowd majority": 5})) == ["crowdsourced"]
    # A site's own annotators are not a crowd.
    assert hub_card.annotations_creators(facts("local", **{"crowd majority": 5})) == ["expert-generated"]
    both = facts(**{"crowd majority": 5, "machine-accepted": 3, "adjudicated": 1})
    assert hub_card.annotations_creators(both) == ["crowdsourced", "machine-generated", "expert-generated"]
    local = facts("local", **{"machine-accepted": 3, "adjudicated": 1})
    assert hub_card.annotations_creators(local) == ["expert-generated", "machine-generated"]
    assert hub_card.annotations_creators(facts(**{"machine-accepted": 0, "adjudicated": 0})) == ["crowdsourced"]
    assert set(hub_card.annotations_creators(facts("local", **{"machine-accepted": 1, "adjudicated": 1}))) <= {
        "crowdsourced",
        "expert-generated",
        "found",
        "machine-generated",
        "no-annotation",
        "other",
    }


def test_source_datasets_name_the_ir_datasets_collection():
    facts = {"source_dataset": "ir_datasets:msmarco-passage/dev/small (ir_datasets 0.5.9)"}
    assert hub_card.source_datasets(facts) == ["extended|msmarco-passage/dev/small"]
    assert hub_card.source_datasets({"source_dataset": None}) == ["original"]


def test_no_license_is_chosen_for_the_researcher():
    with pytest.raises(ValueError, match="choose a license"):
        hub_card.check_license(None)
    with pytest.raises(ValueError, match="unknown license"):
        hub_card.check_license("CC-BY")
    assert hub_card.check_license("odc-by") == "odc-by"


def test_yaml_header_quotes_what_yaml_would_misread():
    text = hub_card.render_header(
        {"pretty_name": 'b1: "queries" # 2', "configs": [{"config_name": "q", "default": True}]}
    )
    yaml = pytest.importorskip("yaml")
    assert yaml.safe_load(text.strip("-\n")) == {
        "pretty_name": 'b1: "queries" # 2',
        "configs": [{"config_name": "q", "default": True}],
    }


def test_prolific_screeners_become_annotator_demographics():
    facts = {"prolific": {"filters": [{"filter_id": "current-country-of-residence", "selected_values": ["1", "2"]}]}}
    text = statements.demographics(facts)
    assert "current-country-of-residence: 1, 2" in text and "not collected" in text
    assert statements.demographics({"prolific": None}) is None
    assert statements.demographics({"prolific": {"filters": []}}) is None


def test_machine_tools_state_the_guarantee_and_calibration():
    machine = {
        "labeller": "chat",
        "model": "gpt-x",
        "prompt / rules version": "gender-v2",
        "confidence threshold": 0.97,
        "guarantee": "with probability ≥ 0.95 (1 − δ) over the blind sample, ...",
        "estimated accuracy of accepted labels": 0.981,
        "its 95% CI": [0.95, 0.995],
        "machine-accepted queries": 120,
        "calibration sample": "rb-cal (150 queries labelled by the crowd)",
        "calibration accuracy": 0.93,
        "calibration Cohen's kappa": 0.88,
        "kappa 95% CI": [0.8, 0.93],
        "expected calibration error": 0.04,
        "Brier score": 0.1,
    }
    text = statements.machine_tools({"machine": machine, "labels": {"sources": {"machine-accepted": 120}}})
    assert "chat, model gpt-x, prompt/rules gender-v2" in text and "confidence 0.970" in text
    assert "120 queries" in text and "[0.950, 0.995]" in text and "with probability ≥ 0.95" in text
    assert "Cohen's kappa 0.880 (95% CI [0.800, 0.930])" in text and "rb-cal" in text
    assert statements.machine_tools({"machine": None}) is None


def test_rai_fields_leave_out_what_does_not_apply():
    facts = {
        "batch": {
            "name": "b",
            "provider_display": "Prolific",
            "annotators": "participants recruited through Prolific",
            "source": "gq",
            "assignments_per_query": 3,
            "queries_per_hit": 10,
            "reward": "1.00",
            "qualifications": {},
            "min_votes": 2,
        },
        "pool": None,
        "quality": {"gold_per_hit": 0, "training_queries": 0, "escalate_until": None},
        "prolific": {"filters": [{"filter_id": "fluent-languages", "selected_values": ["19"]}]},
        "agreement": {
            "level": 0.95,
            "krippendorff_alpha": None,
            "alpha_ci": [None, None],
            "bootstrap_resamples": 1000,
            "percent_agreement": None,
            "fleiss_kappa": None,
            "judgments": 0,
            "workers": 0,
            "judgments_per_query": {},
        },
        "labels": {
            "queries": 3,
            "labelled": 0,
            "counts": {"n": 0, "f": 0, "m": 0, "o": 0},
            "sources": {},
            "adjudicated": 0,
            "set_aside": {"disputed": 0, "too_few_votes": 3},
        },
        "non_gendered_share": {"estimate": None, "ci": [None, None], "method": "Wilson score"},
        "machine": None,
    }
    fields = rai_fields(facts)
    assert fields["rai:annotatorDemographics"] == [statements.demographics(facts)]
    assert "rai:machineAnnotationTools" not in fields
    assert "No gold questions" in fields["rai:dataAnnotationProtocol"][0]
    assert "no interval (too little data)" in fields["rai:dataAnnotationAnalysis"][0]
    assert fields["rai:annotationsPerItem"] == (
        "3 annotators per query planned; 0.00 usable human votes per query on average over the 3 queries; "
        "3 of 3 queries have no human vote."
    )


def test_annotations_per_item_is_the_mean_of_the_vote_distribution():
    facts = {
        "batch": {"assignments_per_query": 3},
        # 10 queries: 2 with 2 votes, 5 with 3 votes (what the agreement report counts), 3 with none.
        "agreement": {"judgments_per_query": {"2": 2, "3": 5}},
        "labels": {"queries": 10, "sources": {"crowd majority": 7, "machine-accepted": 3}},
    }
    # (2*2 + 5*3) / 10 = 1.90 over every query; 19 / 7 = 2.71 over the voted ones.
    assert statements.annotations_per_item(facts) == (
        "3 annotators per query planned; 1.90 usable human votes per query on average over the 10 queries "
        "(2.71 over the 7 queries with votes); 3 of 10 queries have no human vote "
        "(3 queries carry a machine-accepted label)."
    )
    facts["labels"] = {"queries": 7, "sources": {"crowd majority": 7}}
    assert statements.annotations_per_item(facts) == (
        "3 annotators per query planned; 2.71 usable human votes per query on average over the 7 queries; "
        "0 of 7 queries have no human vote."
    )
