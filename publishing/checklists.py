"""The venues' checklists on annotators and language-model use, answered from the study's records.

ACL's Responsible NLP Research checklist, section D (human annotators: D1 instructions, D2
recruitment and pay, D3 consent, D4 ethics review, D5 the annotators' characteristics) and
section E (AI assistants, E1), and the NeurIPS paper checklist's items 14 (crowdsourcing and
research with human subjects), 15 (IRB approvals) and 16 (declaration of LLM usage).

The questions are quoted as the venues word them (see :data:`SOURCES`); the answers state what
the platform recorded, with the figures the methods text and the dataset card state (the study's
facts, :func:`annotation.exports.selectors.study_facts`; the sentences of
:mod:`publishing.statements`), and the provider's own pay records. What only the
researcher can know (an ethics board's approval, consent given elsewhere, whether pay was
adequate) is marked :data:`TO_ANSWER`, never guessed.

Pure: plain dicts in, :class:`Item` and Markdown out (the paper bundle sets them as LaTeX:
:func:`publishing.latex.checklist_tex`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any

from .statements import count, demographics, machine_tools, machine_unused, who_labelled

#: What the researcher writes before submitting, in place of an answer the records cannot give.
TO_ANSWER = "[to be answered by the authors]"

#: Where each question's wording is quoted from.
SOURCES = {
    "ACL": (
        "ACL Responsible NLP Research checklist: section D as in ACL's template "
        "(github.com/acl-org/responsibleNLPresearch, templates/responsibleNLPresearch.tex), section E as on ARR's "
        "submission form since ACL 2023 (aclrollingreview.org/responsibleNLPresearch)"
    ),
    "NeurIPS": "NeurIPS paper checklist (2025 edition, items 14-16; neurips.cc/public/guides/PaperChecklist)",
}

#: How a page names each source (the full reference is in :data:`SOURCES`).
SHORT_SOURCES = {
    "ACL": "ACL Responsible NLP Research checklist, sections D and E",
    "NeurIPS": "NeurIPS paper checklist, items 14 to 16",
}

#: The questions, word for word (``SOURCES``): (venue, key, question).
QUESTIONS: tuple[tuple[str, str, str], ...] = (
    ("ACL", "D", "Did you use human annotators (e.g., crowdworkers) or research with human subjects?"),
    (
        "ACL",
        "D1",
        "Did you report the full text of instructions given to participants, including e.g., screenshots, "
        "disclaimers of any risks to participants or annotators, etc.?",
    ),
    (
        "ACL",
        "D2",
        "Did you report information about how you recruited (e.g., crowdsourcing platform, students) and paid "
        "participants, and discuss if such payment is adequate given the participants' demographic (e.g., country "
        "of residence)?",
    ),
    (
        "ACL",
        "D3",
        "Did you discuss whether and how consent was obtained from people whose data you're using/curating (e.g., "
        "did your instructions explain how the data would be used)?",
    ),
    ("ACL", "D4", "Was the data collection protocol approved (or determined exempt) by an ethics review board?"),
    (
        "ACL",
        "D5",
        "Did you report the basic demographic and geographic characteristics of the annotator population that is "
        "the source of the data?",
    ),
    ("ACL", "E", "Did you use AI assistants (e.g., ChatGPT, Copilot) in your research, coding, or writing?"),
    ("ACL", "E1", "Did you include information about your use of AI assistants?"),
    (
        "NeurIPS",
        "14",
        "Crowdsourcing and research with human subjects. For crowdsourcing experiments and research with human "
        "subjects, does the paper include the full text of instructions given to participants and screenshots, if "
        "applicable, as well as details about compensation (if any)?",
    ),
    (
        "NeurIPS",
        "15",
        "Institutional review board (IRB) approvals or equivalent for research with human subjects. Does the paper "
        "describe potential risks incurred by study participants, whether such risks were disclosed to the "
        "subjects, and whether Institutional Review Board (IRB) approvals (or an equivalent approval/review based "
        "on the requirements of your country or institution) were obtained?",
    ),
    (
        "NeurIPS",
        "16",
        "Declaration of LLM usage. Does the paper describe the usage of LLMs if it is an important, original, or "
        "non-standard component of the core methods in this research? Note that if the LLM is used only for "
        "writing, editing, or formatting purposes and does not impact the core methodology, scientific "
        "rigorousness, or originality of the research, declaration is not required.",
    ),
)

#: How each provider's people are recruited, as D2 asks ("crowdsourcing platform, students").
RECRUITED = {
    "prolific": "participants recruited through Prolific",
    "mturk": "crowd workers recruited through Amazon Mechanical Turk",
    "local": "in-house annotators with accounts on the platform (the research team's own)",
}


@dataclass(frozen=True)
class Item:
    """One question with its answer from the records.

    ``answer``: ``Yes``, ``No``, ``N/A`` or :data:`TO_ANSWER` (only the researcher can answer);
    ``text``: what the records say (figures included), ``researcher``: what the researcher must
    still add (empty if nothing), always starting with :data:`TO_ANSWER`.
    """

    venue: str
    key: str
    question: str
    answer: str
    text: str
    researcher: str = ""


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
    """The instructions exactly as the task page shows them (the real template's text, read from the
    rendered page, so it can never differ from what annotators saw): one paragraph a line."""
    parser = _Instructions()
    parser.feed(html)
    lines = (" ".join(line.split()) for line in "".join(parser.parts).split("\n"))
    return "\n".join(line for line in lines if line)


def _money(value: Any) -> str:
    return f"${value}"


def pay_sentence(row: Mapping[str, Any]) -> str:
    """One crowd batch's recruitment and pay: who, the reward, the effective hourly rate from the provider's records."""
    who = RECRUITED.get(row["provider"], f"annotators ({row['provider']})")
    if row["provider"] == "local":
        return (
            f"Batch {row['batch']}: {who}; the platform records no payment to them "
            f"({count(row['tasks'], 'task')} submitted)."
        )
    text = f"Batch {row['batch']}: {who}, paid {_money(row['reward'])} per task of {count(row['per_task'], 'query')}"
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


def human_labels(facts: Mapping[str, Any]) -> int:
    """How many labels people made (crowd or in-house majority, or a ruling)."""
    by = facts["labels"]["labelled_by"]
    return by.get("crowd", 0) + by.get("in-house", 0) + by.get("adjudicator", 0)


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


def machine_sentence(facts: Mapping[str, Any]) -> str | None:
    """Which machine labelled what, with its prompt version and guarantee (the card's sentence), or None."""
    return machine_tools(facts) or machine_unused(facts)


def checklist_items(
    facts: Mapping[str, Any], pay: Sequence[Mapping[str, Any]], page: Mapping[str, Any] | None
) -> list[Item]:
    """Every question of :data:`QUESTIONS` answered from the records.

    ``facts``: the batch's study facts; ``pay``: one row per crowd batch (``batch``, ``provider``,
    ``reward``, ``per_task``, ``tasks``, ``timed``, ``median_seconds``, ``median_hourly_rate``,
    ``rate_source``, ``estimated_minutes``); ``page``: the task page (``title``, ``description``,
    ``instructions``, ``html``, ``screenshot`` or ``note``), None if the batch has no task.
    """
    # People were asked (a crowd batch ran) or answered: the annotator questions apply.
    people = bool(pay) or human_labels(facts) > 0 or bool(facts["agreement"].get("judgments"))
    machine = machine_sentence(facts)
    spent = facts["batch"]["spent"]
    pay_text = " ".join(pay_sentence(row) for row in pay) or "No crowd batch was run."
    paid = any(row["provider"] != "local" for row in pay)
    spent_text = f" Spent on annotation in all: ${spent} (fees and bonuses included)." if paid else ""
    adequacy = (
        f"{TO_ANSWER} whether this pay is adequate given the participants' demographic (e.g. their country of "
        "residence), e.g. against the minimum wage where the data is collected."
        if paid
        else f"{TO_ANSWER} how the in-house annotators were compensated (e.g. as part of their employment)."
    )
    screeners = demographics(facts)
    instructions = _instructions_item(page)
    answers: dict[str, tuple[str, str, str]] = {
        "D": (
            "Yes" if people else "No",
            annotators_sentence(facts) if people else "No person labelled a query: every label is a machine's.",
            "",
        ),
        "D1": (
            "Yes" if page else "N/A",
            instructions,
            f"{TO_ANSWER} any disclaimer of risks given to annotators: the task page states none.",
        ),
        "D2": ("Yes", pay_text + spent_text, adequacy),
        "D3": (
            TO_ANSWER,
            "No consent text is configured on the platform: the task page shows the instructions only, and they do "
            "not say how the answers will be used.",
            f"{TO_ANSWER} whether and how consent was obtained (e.g. on the recruiting platform, or in an information "
            "sheet).",
        ),
        "D4": (
            TO_ANSWER,
            "The platform records no ethics review.",
            f"{TO_ANSWER} the board that approved the protocol or determined it exempt, or why none was sought.",
        ),
        "D5": (
            TO_ANSWER,
            (screeners or "No demographic or geographic characteristic of the annotators was collected.")
            + " "
            + annotators_sentence(facts),
            f"{TO_ANSWER} the annotators' demographic and geographic characteristics, if known.",
        ),
        "E": (
            "Yes" if machine else TO_ANSWER,
            machine or "No machine labelled any query: every label comes from people.",
            f"{TO_ANSWER} any use of AI assistants for coding or writing. (This checklist, the methods and limitations "
            "text were written by the platform from the study's records, not by a language model.)",
        ),
        "E1": (
            "Yes" if machine else TO_ANSWER,
            machine or "No machine labelled any query.",
            f"{TO_ANSWER} the section of the paper that states this use.",
        ),
        "14": (
            "Yes" if page else "N/A",
            f"{instructions} Compensation: {pay_text}{spent_text}",
            adequacy,
        ),
        "15": (
            TO_ANSWER,
            "The platform records no ethics review, and the task page describes no risk to participants.",
            f"{TO_ANSWER} the risks to participants, whether they were disclosed, and the IRB (or equivalent) approval.",
        ),
        "16": (
            "Yes" if machine else "N/A",
            machine or "No language model or other machine labelled any query: every label comes from people.",
            "",
        ),
    }
    return [
        Item(venue, key, question, *answers[key])
        for venue, key, question in QUESTIONS
        if people or key in ("D", "E", "E1", "16")
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
