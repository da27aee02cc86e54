"""The checklists say what happened (issue 54, item 4), read against the records here, not the code's facts.

Three batches: a machine-first batch labelled by a language model, the same by the word-list rules
labeller, and a crowd-only batch. "An LLM or AI assistant was used" (ACL E, E1; NeurIPS 16) only
where the routing in force accepted labels of a labeller whose class declares a language model; the
pay as the provider's batch records it, and an in-house batch's reward stated as nominal the same way
in the methods text, the dataset card and the checklist; every ACL B and C "Yes" names its section;
the card says per query who saw it (the judgments' own qids, counted here).
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from annotation import selectors as annotation_selectors
from annotation import services
from annotation.machine.prelabellers.interface import is_language_model
from annotation.machine.services.calibration import create_calibration_sample
from annotation.machine.services.prelabels import prelabel_batch
from annotation.machine.services.routing import route_batch
from annotation.models import Batch, Judgment, Routing
from platforms.inhouse.services.simulation import simulate_local_annotations
from pooling.models import QuerySet
from pooling.services import create_query_set
from publishing import statements
from publishing.checklist_questions import QUESTIONS, TO_ANSWER
from publishing.checklists import checklist_items
from publishing.methods_text import annotation_paragraph
from publishing.services.records import crowd_pay
from tests.annotation.conftest import make_batch
from tests.annotation.machine.test_calibration_flow import NoisyMachine, _texts, answer_sample_until_in

pytestmark = pytest.mark.django_db

#: A report's settings as the paper bundle passes them (ACL B and C), for the checklist only.
SETTINGS = {
    "runs": ["bm25", "monot5"],
    "cutoffs": [10],
    "report_queries": 40,
    "tokenizer": "whitespace",
    "bootstrap_samples": 1000,
    "seed": 0,
    "policy": None,
    "qrels": None,
    "measures": [],
    "software_version": "test",
}


class ChatMachine(NoisyMachine):
    """The calibrated test machine, declared a language model (as ``openai`` is)."""

    name = "test-chat"
    model = "test-chat-model"
    language_model = True


@pytest.fixture(autouse=True)
def chat_registered(monkeypatch):
    """The test's language model in the pre-labeller registry for this module's tests only."""
    from annotation.machine.prelabellers import interface

    monkeypatch.setitem(interface._REGISTRY._classes, "test-chat", ChatMachine)


def _machine_first(labeller, name: str, target: float = 0.9, **options) -> tuple[Batch, Routing]:
    query_set = create_query_set(f"{name}-q", _texts(), origin=QuerySet.Origin.IMPORTED)
    batch = make_batch(query_set, name=name, assignments_per_query=3, queries_per_hit=5)
    prelabel_batch(batch, labeller)
    sample = create_calibration_sample(batch, 60, seed=1)
    services.publish_batch(sample)
    simulate_local_annotations(sample, annotators=4, accuracy=0.95, seed=2)
    answer_sample_until_in(batch)
    routing = route_batch(batch, target, **({"risk": None} | options))
    if routing.routed_batch is not None:
        services.publish_batch(routing.routed_batch)
        simulate_local_annotations(routing.routed_batch, annotators=4, accuracy=0.9, seed=3)
    return batch, routing


def _items(batch) -> dict:
    facts = annotation_selectors.study_facts(batch)
    return facts, {item.key: item for item in checklist_items(facts, crowd_pay(batch), None, SETTINGS)}


def _kept(routing: Routing) -> int:
    """The machine's labels the routing in force kept, from its record."""
    return len(routing.accepted)


def _llm_answers(items) -> tuple[str, str, str]:
    return items["E"].answer, items["E1"].answer, items["16"].answer


def test_the_registry_reads_each_labellers_declaration():
    assert is_language_model("openai") and is_language_model("test-chat")
    assert not is_language_model("rules") and not is_language_model("trained")
    assert not is_language_model("no-such-labeller")  # a labeller no longer registered is not assumed one


@pytest.mark.slow
def test_a_language_models_kept_labels_are_declared_and_the_card_says_per_query_who_saw_it(db):
    batch, routing = _machine_first(ChatMachine(), "llm")
    assert routing.labeller == "test-chat" and _kept(routing) > 0  # the records: an LLM's labels are kept
    facts, items = _items(batch)
    assert _llm_answers(items) == ("Yes", "Yes", "Yes")
    for key in ("E", "E1", "16"):
        assert items[key].section and items[key].text.startswith(f"In {items[key].section}: ")
        assert "test-chat-model" in items[key].text
        assert f"test-chat (a language model; {_kept(routing)} labels kept)" in items[key].text
    # The same batch's dataset card says per query who saw it (one machine-first study built for both).
    queries = batch.queries.filter(is_gold=False).count()
    # Who saw which query, from the judgments themselves (the batch's and its crowd batches').
    parts = [batch.pk, *Batch.objects.filter(parent=batch).values_list("pk", flat=True)]
    seen = set(
        Judgment.objects.filter(batch_query__batch__in=parts, batch_query__is_gold=False).values_list(
            "batch_query__qid", flat=True
        )
    )
    assert 0 < len(seen) < queries and _kept(routing) > 0
    text = statements.protocol(facts)
    assert "Each query was shown" not in text
    assert f"{len(seen)} of the {queries} queries were shown to people" in text
    assert f"the other {queries - len(seen)} were shown to no one" in text


@pytest.mark.slow
def test_the_rules_labeller_is_no_language_model_even_with_labels_kept(db):
    from annotation.machine.prelabellers.interface import get_prelabeller

    batch, routing = _machine_first(get_prelabeller("rules"), "rules", target=0.6)
    assert routing.labeller == "rules" and _kept(routing) > 0  # the word list's labels are in the data
    _, items = _items(batch)
    assert _llm_answers(items) == (TO_ANSWER, TO_ANSWER, "N/A")
    assert "No language model's label is in the data" in items["16"].text
    assert f"rules (not a language model; {_kept(routing)} labels kept)" in items["16"].text
    assert "any use of AI assistants for coding or writing" in items["E"].researcher


@pytest.mark.slow
def test_a_language_model_whose_labels_were_all_discarded_is_not_declared(db):
    batch, routing = _machine_first(ChatMachine(), "llm-none", target=0.999, risk=0.05)
    assert _kept(routing) == 0  # the routing accepted none of its labels
    _, items = _items(batch)
    assert _llm_answers(items) == (TO_ANSWER, TO_ANSWER, "N/A")
    assert "none of its labels was accepted" in items["16"].text
    assert "test-chat (a language model; 0 labels kept)" in items["16"].text


def test_a_crowd_only_batch_declares_no_machine_and_its_recorded_pay(query_set):
    from tests.publishing.test_checklists import test_mturk_pay_is_the_reward_over_each_tasks_time

    batch = make_batch(query_set, name="crowd", provider="mturk", reward=Decimal("0.75"))
    _, items = _items(batch)
    assert _llm_answers(items) == (TO_ANSWER, TO_ANSWER, "N/A")
    assert items["16"].text == "No machine labelled any query: every label comes from people."
    recorded = Batch.objects.get(name="crowd").reward
    assert f"paid ${recorded} per task of 3 queries" in items["D2"].text
    assert "nominal" not in items["D2"].text
    assert callable(test_mturk_pay_is_the_reward_over_each_tasks_time)  # the rate itself is tested there


def test_every_acl_yes_names_its_section_and_b_c_are_answered(query_set):
    batch = make_batch(query_set, name="crowd", provider="mturk")
    facts, items = _items(batch)
    keys = [key for venue, key, _ in QUESTIONS if venue == "ACL"]
    assert [k for k in keys if k[0] in "BC"] == ["B", "B1", "B2", "B3", "B4", "B5", "B6", "C", "C1", "C2", "C3", "C4"]
    for key in keys:
        item = items.get(key)
        if item is None:
            continue
        if item.answer == "Yes":
            assert item.section, key
            assert item.text.startswith(f"In {item.section}: "), (key, item.text)
        else:
            assert not item.section, key
    assert items["B3"].answer == "Yes" and "\u201cUses\u201d" in items["B3"].section
    for use in statements.use_cases(facts):
        assert use in items["B3"].text
    assert f"{facts['labels']['queries']} queries" in items["B6"].text
    assert "1000 resamples, seed 0" in items["C3"].text
    assert items["C1"].answer == TO_ANSWER  # the platform ran no ranking model
    # Without a report's settings (no paper), B and C are left out, never guessed.
    facts = annotation_selectors.study_facts(batch)
    assert not {i.key for i in checklist_items(facts, crowd_pay(batch), None)} & {"B", "C", "B1", "C1"}


def test_an_in_house_reward_is_nominal_the_same_way_in_methods_card_and_checklist(local_batch, annotators):
    from platforms.inhouse.services.handout import next_assignment
    from platforms.inhouse.services.hit_page import submit_local_assignment
    from publishing.hub_card import card
    from publishing.tables import configs_for
    from tests.annotation.conftest import answers_for

    for user in annotators[:2]:
        while (assignment := next_assignment(user, local_batch)) is not None:
            submit_local_assignment(assignment, answers_for(assignment))
    reward = Batch.objects.get(pk=local_batch.pk).reward  # 0.05, as the batch records it
    facts, items = _items(local_batch)
    nominal = f"with a nominal reward of ${reward} per task, which the platform does not pay"
    assert nominal in items["D2"].text and "in-house annotators were compensated" in items["D2"].researcher
    configs = configs_for(False)
    readme = card(
        facts,
        configs,
        {c.name: 0 for c in configs},
        license_id="cc-by-4.0",
        pretty_name="t",
        citation="",
        published="2026-11-25",
    )
    assert nominal in readme and f"paid ${reward}" not in readme
    methods = annotation_paragraph(facts, {})
    assert f"with a nominal reward of {reward} USD per task, which the platform does not pay" in methods
    assert f"paid {reward} USD" not in methods
