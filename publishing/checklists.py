"""The venues' checklists on artifacts, experiments, annotators and language-model use, answered from the records:
ACL's Responsible NLP Research checklist, sections B to E, and the NeurIPS paper checklist's items 14 to 16, their
questions quoted word for word (:mod:`publishing.checklist_questions`).

A "Yes" names where the paper (:data:`SECTIONS`) or the dataset card says it, as ACL's form asks; the answers state
what the platform recorded, with the figures of :mod:`publishing.statements`. What only the researcher can know (an
ethics board's approval, consent given elsewhere, whether pay was adequate) is :data:`TO_ANSWER`, never guessed.
Pure: plain dicts in, :class:`Item` and Markdown out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any

from .checklist_questions import QUESTIONS, SOURCES, TO_ANSWER
from .statements import (
    collection,
    count,
    demographics,
    language_model_used,
    machine_labeller_kinds,
    machine_tools,
    machine_unused,
    out_of_scope,
    personal_information,
    reward_clause,
    reward_paid,
    use_cases,
    who_labelled,
)

#: How each provider's people are recruited, as D2 asks ("crowdsourcing platform, students").
RECRUITED = {
    "prolific": "participants recruited through Prolific",
    "mturk": "crowd workers recruited through Amazon Mechanical Turk",
    "local": "in-house annotators with accounts on the platform (the research team's own)",
}


#: The paper bundle's sections (``main.tex``) an answer points to, and the dataset card's.
SECTIONS = {
    "method": "Section \u201cMethod\u201d",
    "results": "Section \u201cResults\u201d",
    "checklists": "the appendix \u201cChecklists\u201d",
}


def card_section(*names: str) -> str:
    """Where the dataset card says it: the card ``publish_dataset`` writes (README.md), its sections by name."""
    quoted = " and ".join(f"\u201c{name}\u201d" for name in names)
    return f"the dataset card (the README of the published dataset), section{'s' if len(names) > 1 else ''} {quoted}"


@dataclass(frozen=True)
class Item:
    """One question with its answer from the records: ``answer`` ``Yes``, ``No``, ``N/A`` or :data:`TO_ANSWER`;
    ``text`` what the records say, for a ``Yes`` starting with where it is said (``section``); ``researcher`` what
    the researcher must still add, starting with :data:`TO_ANSWER`.
    """

    venue: str
    key: str
    question: str
    answer: str
    text: str
    researcher: str = ""
    section: str = ""


class _Instructions(HTMLParser):
    """The text of the HIT page's ``#instructions`` element, whitespace collapsed, paragraphs kept."""

    BLOCKS = {"p", "dt", "dd", "summary", "li", "h2"}

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0  # inside #instructions: the element nesting depth
        self.parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.depth:
            self.depth += 1
            if tag in self.BLOCKS:
                self.parts.append("\n")
            elif tag == "q":  # the page's stylesheet sets quotation marks around an example
                self.parts.append("\u201c")
        elif dict(attrs).get("id") == "instructions":
            self.depth = 1

    def handle_endtag(self, tag: str) -> None:
        if self.depth:
            self.depth -= 1
            if tag == "q":
                self.parts.append("\u201d")

    def handle_data(self, data: str) -> None:
        if self.depth:
            self.parts.append(" ".join(data.split("\n")))  # a line break in the source is a space


def instructions_text(html: str) -> str:
    """The instructions as the task page shows them, read from the rendered page (so they never differ from what
    annotators saw): one paragraph a line."""
    parser = _Instructions()
    parser.feed(html)
    lines = (" ".join(line.split()) for line in "".join(parser.parts).split("\n"))
    return "\n".join(line for line in lines if line)


def pay_sentence(row: Mapping[str, Any]) -> str:
    """One crowd batch's recruitment and pay: who, the reward, the effective hourly rate from the provider's records."""
    who = RECRUITED.get(row["provider"], f"annotators ({row['provider']})")
    pay = reward_clause(row["provider"], row["reward"])
    if not reward_paid(row["provider"]):
        return f"Batch {row['batch']}: {who}, {pay}; the platform records no payment to them ({count(row['tasks'], 'task')} submitted)."
    text = f"Batch {row['batch']}: {who}, {pay} of {count(row['per_task'], 'query')}"
    rate = row.get("median_hourly_rate")
    if rate is not None:
        text += (
            f"; median effective hourly rate ${rate:.2f} (the reward over each task's time taken; median time "
            f"{row['median_seconds'] / 60:.1f} minutes, {row['rate_source']})"
        )
    else:
        text += f"; no task time recorded yet, so no effective hourly rate ({row['rate_source']})"
    if row.get("estimated_minutes"):
        text += f"; the study was advertised at {row['estimated_minutes']} minutes"
    return text + "."


def _instructions_item(page: Mapping[str, Any] | None) -> str:
    if not page:
        return "The batch has no task page (no task was made), so no instructions were shown."
    shot = (
        f"a screenshot of the task page with the batch's first queries is {page['screenshot']}"
        if page.get("screenshot")
        else f"{page['note']}; {page['html']} is the page itself, to open in a browser"
    )
    return (
        f"Every task page showed the instructions below, in full; the study was listed as \u201c{page['title']}\u201d "
        f"(\u201c{page['description']}\u201d). {shot[0].upper() + shot[1:]}."
    )


def annotators_sentence(facts: Mapping[str, Any]) -> str:
    """Who labelled, with counts: the card's own wording (:func:`who_labelled`) and the agreement's annotator count."""
    agreement, labels = facts["agreement"], facts["labels"]
    text = (
        f"{count(agreement['workers'] or 0, 'annotator')} gave {count(agreement['judgments'] or 0, 'usable judgment')}. "
        f"Of the {count(labels['queries'], 'query')}, {labels['labelled']} are labelled: {who_labelled(facts)}."
    )
    if labels.get("adjudicated"):
        text += f" Researchers ruled on {count(labels['adjudicated'], 'query')}."
    return text


def _yes(where: str, text: str, researcher: str = "") -> tuple[str, str, str, str]:
    """A "Yes" answer: ``text`` said in ``where``, the section it points to."""
    return "Yes", f"In {where}: {text}", researcher, where


def _llm_items(facts: Mapping[str, Any]) -> dict[str, tuple[str, str, str, str]]:
    """E, E1 and 16: an LLM was used only if a language model's labels are in the data."""
    kinds = machine_labeller_kinds(facts)
    if language_model_used(facts):
        text = " ".join(part for part in (machine_tools(facts), kinds) if part)
        return {
            "E": _yes(SECTIONS["method"], text, _ai_writing()),
            "E1": _yes(SECTIONS["method"], text),
            "16": _yes(SECTIONS["method"], text),
        }
    if kinds:
        unused = machine_unused(facts)
        text = (
            "No language model's label is in the data. "
            + (f"{unused} " if unused else (f"{machine_tools(facts)} " if machine_tools(facts) else ""))
            + kinds
        )
    else:
        text = "No machine labelled any query: every label comes from people."
    return {
        "E": (TO_ANSWER, text, _ai_writing(), ""),
        "E1": _ask(text, "the section of the paper that states any use of AI assistants."),
        "16": ("N/A", text, "", ""),
    }


def _ask(text: str, researcher: str) -> tuple[str, str, str, str]:
    """An answer only the researcher can give: ``text`` what the records say, ``researcher`` what they must add."""
    return TO_ANSWER, text, f"{TO_ANSWER} {researcher}", ""


def _ai_writing() -> str:
    return (
        f"{TO_ANSWER} any use of AI assistants for coding or writing. (This checklist, the methods and limitations "
        "text were written by the platform from the study's records, not by a language model.)"
    )


def _artifact_items(facts: Mapping[str, Any], settings: Mapping[str, Any]) -> dict[str, tuple[str, str, str, str]]:
    """B1-B6 from the study's facts (what the methods text and the dataset card state)."""
    batch, labels = facts["batch"], facts["labels"]
    origin = batch.get("queries_from")
    source = batch.get("query_set") or batch["source"]
    method = SECTIONS["method"]
    runs = ", ".join(settings.get("runs") or []) or "the report's runs"
    used = (
        f"The queries of {source} and the runs {runs} were used; the labels of {count(labels['queries'], 'query')} "
        "were created (the dataset publish_dataset writes)."
    )
    if origin:
        b1 = _yes(
            method,
            f"the query text's source, {origin['short']}, is cited ({origin['citation_key']}), "
            "and every method the text names is cited (references.bib).",
        )
        b2 = _yes(
            method,
            f"the query text's licence is stated ({origin['licence']}, {origin['url']}); "
            f"{card_section('License')} states the dataset's licence, chosen when it is published.",
        )
    else:
        b1 = _ask(
            f"The methods text cites every method it names (references.bib); the query set {source} "
            "has no recorded origin, so its creators are not cited.",
            "the citation of the query set's creators.",
        )
        b2 = _ask(
            f"{card_section('License')} states the dataset's licence, chosen when it is published; the "
            f"query set {source} has no recorded licence.",
            "the terms of use of the query text.",
        )
    counts = ", ".join(f"{name} {labels['counts'][code]}" for code, name in labels["names"].items())
    return {
        "B": _yes(method, used),
        "B1": b1,
        "B2": b2,
        "B3": _yes(
            card_section("Uses", "Out-of-scope use"),
            " ".join(use_cases(facts) + out_of_scope(facts)),
            f"{TO_ANSWER} whether the use of the query set and the runs is consistent with their intended use.",
        ),
        "B4": _yes(
            card_section("Personal information"),
            personal_information(facts),
            f"{TO_ANSWER} whether the query text was checked for offensive content (the platform does not check).",
        ),
        "B5": _yes(
            card_section("How the queries were chosen", "Biases and limitations"),
            collection(facts) + " English queries only; four gender categories.",
        ),
        "B6": _yes(
            method,
            f"{count(labels['queries'], 'query')}, {labels['labelled']} labelled ({counts}); "
            f"{card_section('Configurations')} gives each configuration's rows. The data is one split "
            "(train): no test or development split was made.",
        ),
    }


def _experiment_items(settings: Mapping[str, Any]) -> dict[str, tuple[str, str, str, str]]:
    """C and C1-C4 from the report's settings (what the methods text states)."""
    method, results = SECTIONS["method"], SECTIONS["results"]
    runs = settings.get("runs") or []
    cutoffs = ", ".join(str(c) for c in settings.get("cutoffs") or [])
    measured = (
        f"the runs {', '.join(runs)} were measured on {settings.get('report_queries')} queries at cutoffs {cutoffs}."
    )
    packages = [f"the platform's software version {settings.get('software_version')}"]
    if settings.get("qrels") and settings.get("measures"):
        packages.insert(0, f"ir_measures for {', '.join(settings['measures'])}")
    policy = settings.get("policy") or {}
    tests = f"; each run compared with the baseline by a {policy['test']}" if policy else ""
    return {
        "C": _yes(f"{method} and {results}", measured),
        "C1": _ask(
            "The runs were given as run files: the platform measured their rankings and ran no ranking model, so it "
            "records no parameter count, compute budget or infrastructure.",
            "the ranking models' number of parameters, the compute budget and the infrastructure.",
        ),
        "C2": _yes(
            method,
            f"cutoffs {cutoffs}, the {settings.get('tokenizer')} tokenizer, the word lists and the "
            "measures' settings are stated; no hyperparameter search was run by the platform.",
            f"{TO_ANSWER} the ranking models' hyperparameters, if the paper trained them.",
        ),
        "C3": _yes(
            f"{method} and {results}",
            f"each value is a mean over the queries of one run per system, with 95% "
            f"percentile bootstrap intervals ({settings.get('bootstrap_samples')} resamples, seed "
            f"{settings.get('seed')}){tests}.",
        ),
        "C4": _yes(method, "; ".join(packages) + "."),
    }


def checklist_items(
    facts: Mapping[str, Any],
    pay: Sequence[Mapping[str, Any]],
    page: Mapping[str, Any] | None,
    settings: Mapping[str, Any] | None = None,
) -> list[Item]:
    """Every question of :data:`QUESTIONS` answered from the records. ``pay``: a row per crowd batch
    (:func:`publishing.services.records.crowd_pay`); ``page``: the task page, None if the batch has no task;
    ``settings``: the report's settings, for ACL's sections B and C (left out without them).
    """
    # People were asked (a crowd batch ran) or answered (a crowd or in-house majority, or a ruling, made a label):
    # the annotator questions apply.
    by = facts["labels"]["labelled_by"]
    people = bool(pay) or any(by.get(agent, 0) for agent in ("crowd", "in-house", "adjudicator"))
    people = people or bool(facts["agreement"].get("judgments"))
    spent = facts["batch"]["spent"]
    pay_text = " ".join(pay_sentence(row) for row in pay) or "No crowd batch was run."
    paid = any(reward_paid(row["provider"]) for row in pay)
    spent_text = f" Spent on annotation in all: ${spent} (fees and bonuses included)." if paid else ""
    adequacy = (
        f"{TO_ANSWER} whether this pay is adequate given the participants' demographic (e.g. their country of "
        "residence), e.g. against the minimum wage where the data is collected."
        if paid
        else f"{TO_ANSWER} how the in-house annotators were compensated (e.g. as part of their employment)."
    )
    screeners = demographics(facts)
    instructions = _instructions_item(page)
    appendix = SECTIONS["checklists"]
    disclaimer = f"{TO_ANSWER} any disclaimer of risks given to annotators: the task page states none."
    shown_and_paid = f"{instructions} Compensation: {pay_text}{spent_text}"
    answers: dict[str, tuple[str, str, str, str]] = {
        "D": _yes(SECTIONS["method"], annotators_sentence(facts))
        if people
        else ("No", "No person labelled a query: every label is a machine's.", "", ""),
        "D1": _yes(appendix, instructions, disclaimer) if page else ("N/A", instructions, disclaimer, ""),
        "D2": _yes(SECTIONS["method"], pay_text + spent_text, adequacy),
        "D3": _ask(
            "No consent text is configured on the platform: the task page shows the instructions only, and they do "
            "not say how the answers will be used.",
            "whether and how consent was obtained (e.g. on the recruiting platform, or in an information sheet).",
        ),
        "D4": _ask(
            "The platform records no ethics review.",
            "the board that approved the protocol or determined it exempt, or why none was sought.",
        ),
        "D5": _ask(
            (screeners or "No demographic or geographic characteristic of the annotators was collected.")
            + " "
            + annotators_sentence(facts),
            "the annotators' demographic and geographic characteristics, if known.",
        ),
        "14": _yes(appendix, shown_and_paid, adequacy) if page else ("N/A", shown_and_paid, adequacy, ""),
        "15": _ask(
            "The platform records no ethics review, and the task page describes no risk to participants.",
            "the risks to participants, whether they were disclosed, and the IRB (or equivalent) approval.",
        ),
    } | _llm_items(facts)
    if settings is not None:
        answers |= _artifact_items(facts, settings) | _experiment_items(settings)
    return [
        Item(venue, key, question, *answers[key])
        for venue, key, question in QUESTIONS
        # Without people only D ("No") of the annotator questions.
        if key in answers and (people or key == "D" or not (key.startswith("D") or key in ("14", "15")))
    ]


def checklist_markdown(items: Sequence[Item], page: Mapping[str, Any] | None) -> str:
    """The checklist as Markdown (``checklist.md``): each venue's questions, answers and the instructions as shown."""
    lines = [
        "# Checklists: annotators and language-model use",
        "",
        f"Answered by the platform from the study's records; fill in every `{TO_ANSWER}` before submitting.",
        "",
    ]
    for venue in dict.fromkeys(item.venue for item in items):
        lines += [f"## {venue}", "", f"Questions quoted from the {SOURCES[venue]}.", ""]
        for item in (i for i in items if i.venue == venue):
            lines += [f"**{item.key}. {item.question}**", "", f"Answer: {item.answer}. {item.text}", ""]
            if item.researcher:
                lines += [item.researcher, ""]
    if page:
        lines += ["## Instructions as shown on the task page", ""]
        lines += [
            f"> {line}" + ("  " if i < len(page["instructions"].splitlines()) - 1 else "")
            for i, line in enumerate(page["instructions"].splitlines())
        ]
        lines.append("")
        if page.get("screenshot"):
            lines += [f"![The task page]({page['screenshot']})", ""]
    return "\n".join(lines)
