"""The venues' checklist questions, quoted word for word from :data:`SOURCES` (ACL's Responsible NLP
Research checklist, sections B to E; the NeurIPS paper checklist, items 14 to 16): data, kept apart from
the answers (:mod:`publishing.checklists`) so a new edition changes this file alone."""

#: What the researcher writes before submitting, in place of an answer the records cannot give.
TO_ANSWER = "[to be answered by the authors]"

#: Where each question's wording is quoted from.
SOURCES = {
    "ACL": (
        "ACL Responsible NLP Research checklist: sections B, C and D as in ACL's template "
        "(github.com/acl-org/responsibleNLPresearch, templates/responsibleNLPresearch.tex), section E as on ARR's "
        "submission form since ACL 2023 (aclrollingreview.org/responsibleNLPresearch)"
    ),
    "NeurIPS": "NeurIPS paper checklist (2025 edition, items 14-16; neurips.cc/public/guides/PaperChecklist)",
}

#: How a page names each source (the full reference is in :data:`SOURCES`).
SHORT_SOURCES = {
    "ACL": "ACL Responsible NLP Research checklist, sections B to E",
    "NeurIPS": "NeurIPS paper checklist, items 14 to 16",
}

#: The questions, word for word (``SOURCES``): (venue, key, question).
QUESTIONS: tuple[tuple[str, str, str], ...] = (
    ("ACL", "B", "Did you use or create scientific artifacts?"),
    ("ACL", "B1", "Did you cite the creators of artifacts you used?"),
    ("ACL", "B2", "Did you discuss the license or terms for use and/or distribution of any artifacts?"),
    (
        "ACL",
        "B3",
        "Did you discuss if your use of existing artifact(s) was consistent with their intended use, provided that "
        "it was specified? For the artifacts you create, do you specify intended use and whether that is compatible "
        "with the original access conditions (in particular, derivatives of data accessed for research purposes "
        "should not be used outside of research contexts)?",
    ),
    (
        "ACL",
        "B4",
        "Did you discuss the steps taken to check whether the data that was collected/used contains any information "
        "that names or uniquely identifies individual people or offensive content, and the steps taken to protect / "
        "anonymize it?",
    ),
    (
        "ACL",
        "B5",
        "Did you provide documentation of the artifacts, e.g., coverage of domains, languages, and linguistic "
        "phenomena, demographic groups represented, etc.?",
    ),
    (
        "ACL",
        "B6",
        "Did you report relevant statistics like the number of examples, details of train/test/dev splits, etc. for "
        "the data that you used/created?",
    ),
    ("ACL", "C", "Did you run computational experiments?"),
    (
        "ACL",
        "C1",
        "Did you report the number of parameters in the models used, the total computational budget (e.g., GPU "
        "hours), and computing infrastructure used?",
    ),
    (
        "ACL",
        "C2",
        "Did you discuss the experimental setup, including hyperparameter search and best-found hyperparameter values?",
    ),
    (
        "ACL",
        "C3",
        "Did you report descriptive statistics about your results (e.g., error bars around results, summary "
        "statistics from sets of experiments), and is it transparent whether you are reporting the max, mean, etc. "
        "or just a single run?",
    ),
    (
        "ACL",
        "C4",
        "If you used existing packages (e.g., for preprocessing, for normalization, or for evaluation), did you "
        "report the implementation, model, and parameter settings used (e.g., NLTK, Spacy, ROUGE, etc.)?",
    ),
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
