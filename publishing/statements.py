"""What a published dataset says of how it was made, in sentences, from the study's facts
(:func:`annotation.exports.selectors.study_facts`): the Hugging Face card and Croissant's Responsible-AI fields
both take their sentences here, so a figure reads the same in both. Pure: plain dicts in, strings out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from genderbias.labels import LABEL_NAMES, LABELS


def number(value: Any, digits: int = 3) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def interval(ci: Any, digits: int = 3) -> str:
    if not ci or any(v is None for v in ci):
        return "no interval (too little data)"
    return f"[{number(float(ci[0]), digits)}, {number(float(ci[1]), digits)}]"


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``1 query``, ``2 queries``: a number with its noun in the right number."""
    if n == 1:
        return f"{n} {noun}"
    return f"{n} {plural or (noun[:-1] + 'ies' if noun.endswith('y') and noun[-2:-1] not in 'aeiou' else noun + 's')}"


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _money(value: Any) -> str:
    return f"${value}" if value not in (None, "") else "n/a"


#: Providers whose annotators the platform pays nothing (the site's own, in-house): a reward set on
#: their batch is nominal, never paid by the platform.
UNPAID_PROVIDERS = frozenset({"local"})


def reward_paid(provider: str) -> bool:
    """Whether a batch's reward was paid through its provider (a crowd platform), or is nominal (in-house)."""
    return provider not in UNPAID_PROVIDERS


def reward_clause(provider: str, reward: Any, money: Any = None) -> str:
    """How every text states a batch's reward per task (``paid $0.50 per task``; nominal for in-house annotators,
    whom the platform pays nothing); ``money`` formats the amount."""
    amount = (money or _money)(reward)
    if reward_paid(provider):
        return f"paid {amount} per task"
    return f"with a nominal reward of {amount} per task, which the platform does not pay"


def language_model_used(facts: Mapping[str, Any]) -> bool:
    """Whether a language model's labels are in the data: the venues' "LLM used" (not a word list's rules, a
    trained classifier, or a model whose labels were all discarded)."""
    return int((facts.get("labels") or {}).get("language_model_labels") or 0) > 0


def machine_labeller_kinds(facts: Mapping[str, Any]) -> str | None:
    """Which machine labellers ran, whether each is a language model and how many of its labels were
    kept (``labels.machine_labellers``); None when no machine ran."""
    labellers = (facts.get("labels") or {}).get("machine_labellers") or {}
    if not labellers:
        return None
    parts = [
        f"{name} ({'a language model' if m['language_model'] else 'not a language model'}; "
        f"{count(m['labels'], 'label')} kept)"
        for name, m in labellers.items()
    ]
    return "Machine labellers: " + "; ".join(parts) + "."


def shown_to_people(facts: Mapping[str, Any]) -> str:
    """How many queries people were shown, and to how many annotators each, as the answers record it
    (``labels.shown_to_people``): a machine-labelled query was shown to no one."""
    labels = facts["labels"]
    queries = labels["queries"]
    people = labels.get("shown_to_people") or {"queries": 0, "annotators": {}}
    shown, distribution = people["queries"], {int(k): int(v) for k, v in people["annotators"].items()}
    planned = facts["batch"]["assignments_per_query"]
    if not shown:
        return (
            f"None of the {count(queries, 'query')} was shown to people ({planned} annotators per query were planned)."
        )
    low, high = min(distribution), max(distribution)
    each = (
        f"each to {count(low, 'annotator')}"
        if low == high
        else f"each to {low} to {high} annotators ({', '.join(f'{n} to {k}' for k, n in distribution.items())})"
    )
    what = (
        f"Each of the {count(queries, 'query')} was shown to people"
        if shown == queries
        else f"{shown} of the {count(queries, 'query')} were shown to people"
    )
    text = f"{what}, {each} ({planned} planned)"
    if shown < queries:
        rest = queries - shown
        machine = machine_labels(facts)
        text += f"; the other {rest} {'was' if rest == 1 else 'were'} shown to no one" + (
            f" ({count(machine, 'query')} labelled by the machine)" if machine else ""
        )
    return text + "."


#: How each agent of ``labels.labelled_by`` is named in a sentence ("... by a majority of in-house annotators").
AGENT_PHRASES = {
    "crowd": "a majority of crowd workers",
    "in-house": "a majority of in-house annotators",
    "adjudicator": "a researcher's ruling (adjudication)",
    "machine": "a machine labeller, accepted by routing",
}


def _agent_phrase(facts: Mapping[str, Any], agent: str) -> str:
    batch, machine = facts["batch"], facts.get("machine")
    if agent == "crowd" and batch.get("provider") != "local":
        return f"a majority of {batch['annotators']}"  # the provider's crowd, by name
    phrase = AGENT_PHRASES[agent]
    if agent == "machine" and machine:
        phrase += (
            f" ({machine['labeller']}, model {machine['model']}, prompt/rules {machine['prompt / rules version']})"
        )
    return phrase


def who_labelled(facts: Mapping[str, Any]) -> str:
    """Who made the labels, with each one's share, largest first (a batch mostly machine-labelled says so first)."""
    labels = facts["labels"]
    labelled = labels["labelled"]
    if not labelled:
        return "no query is labelled yet"
    shares = sorted(((n, agent) for agent, n in labels["labelled_by"].items() if n), key=lambda pair: -pair[0])
    return "; ".join(f"{n} ({100 * n / labelled:.1f}%) by {_agent_phrase(facts, agent)}" for n, agent in shares)


def summary(facts: Mapping[str, Any]) -> str:
    """What the dataset is, in one sentence: queries, the four classes, how many labelled and by whom."""
    labels = facts["labels"]
    names = ", ".join(LABEL_NAMES[c] for c in LABELS)
    return (
        f"{count(labels['queries'], 'query')} annotated for gender reference ({names}); "
        f"{labels['labelled']} labelled: {who_labelled(facts)}."
    )


def cost(facts: Mapping[str, Any]) -> str:
    """What the labels cost: the USD spent, fees and bonuses included, never the estimate made at creation."""
    batch = facts["batch"]
    text = f"Spent on annotation: {_money(batch['spent'])} (fees and bonuses included"
    if facts.get("machine"):
        text += "; the crowd batches of this machine-first batch: its calibration sample and routed queries"
    return text + ")."


def source_query_set(facts: Mapping[str, Any]) -> str:
    """The source query set the text comes from (a pool's source, not the pool)."""
    return facts["batch"].get("query_set") or facts["batch"]["source"]


def source_terms(facts: Mapping[str, Any]) -> str:
    """The terms the query text is under: the source query set's, not the dataset's license."""
    origin = facts["batch"].get("queries_from")
    if origin:
        return (
            f"The query text comes from {origin['short']} ({origin['source']}, {origin['url']}), under its "
            f"licence {origin['licence']}; cite it as {origin['citation_key']}."
        )
    return f"The query text comes from the query set {source_query_set(facts)}; its own terms of use apply to the text."


def collection(facts: Mapping[str, Any]) -> str:
    """Where the queries come from: the pool (runs, cutoff, depth, word list) or the query set."""
    pool = facts["pool"]
    batch = facts["batch"]
    queries = facts["labels"]["queries"]
    if pool is None:
        what = "The query is" if queries == 1 else f"The {queries} queries are"
        return f"{what} the query set {batch['source']}, annotated as a whole."
    dataset = f" (queries from {pool['dataset']})" if pool["dataset"] else ""
    what = "The query was" if facts["labels"]["queries"] == 1 else f"The {facts['labels']['queries']} queries were"
    return (
        f"{what} pooled from query set {pool['source']}{dataset}: the union, "
        f"over the runs {', '.join(pool['runs']) or 'none'}, of the top {pool['depth']} queries of each run's "
        f"female- and male-leaning lists, ranked by the run's rank bias (RaB@{pool['rank_cutoff']}, "
        f"{pool['magnitude']} magnitude, {pool['tokenizer']} tokenizer, word list {pool['wordlist']})."
    )


def platform(facts: Mapping[str, Any]) -> str:
    """The annotation platform and crowd provider."""
    batch = facts["batch"]
    by = batch["annotators"]
    if machine_labels(facts):
        by = f"a machine labeller and {by}"
    return f"Annotated on the gender-bias annotation platform (batch {batch['name']!r}) by {by}."


def protocol(facts: Mapping[str, Any]) -> str:
    """The task, how many answered, pay, gold questions and thresholds, aggregation and rulings."""
    batch, quality = facts["batch"], facts["quality"]
    names = ", ".join(f"{LABEL_NAMES[code]} ({code})" for code in LABELS)
    parts = [
        shown_to_people(facts),
        f"Annotators saw {count(batch['queries_per_hit'], 'query')} per task, "
        f"{reward_clause(batch.get('provider', ''), batch['reward'])}, and chose one of {names} "
        "following Rekabsaz and Schedl (SIGIR 2020).",
    ]
    if quality["gold_per_hit"]:
        parts.append(
            f"Each task held {quality['gold_per_hit']} gold question(s); a task passed with at least "
            f"{_percent(quality['gold_pass_fraction'])} of them right, and failed tasks' answers were not counted. "
            f"Annotators were warned below {_percent(quality['warn_gold_accuracy'])} gold accuracy or "
            f"{_percent(quality['warn_agreement'])} agreement and blocked below "
            f"{_percent(quality['block_gold_accuracy'])} or {_percent(quality['block_agreement'])}."
        )
    else:
        parts.append("No gold questions were used.")
    if quality["training_queries"]:
        parts.append(
            f"Before their first task annotators passed a training step of {quality['training_queries']} queries "
            f"(pass mark {_percent(quality['training_pass_fraction'])})."
        )
    if quality["escalate_until"]:
        parts.append(
            f"Unsettled queries were sent to more annotators (until {quality['escalate_until']}, at most "
            f"{quality['escalation_cap']} extra rounds; {quality['escalations']} escalations applied)."
        )
    if batch.get("qualifications"):
        quals = ", ".join(f"{k}={v}" for k, v in sorted(batch["qualifications"].items()))
        parts.append(f"Worker qualifications: {quals}.")
    parts.append(
        f"A query's label is the strict plurality of at least {batch['min_votes']} usable votes; ties and queries "
        "with too few votes are set aside. A researcher's ruling, with its reason, replaces the majority "
        f"(rulings: {facts['labels']['adjudicated']})."
    )
    machine = machine_tools(facts) or machine_unused(facts)
    if machine:
        parts.append(machine)
    return " ".join(parts)


def audit_sample(facts: Mapping[str, Any]) -> str | None:
    """The expert audit sample in one sentence (None without one), as the card and the paper's methods say it."""
    audit = facts.get("audit")
    if not audit:
        return None
    who = ", ".join(audit["labellers"]) or "nobody yet"
    first, last = audit.get("first_labelled_on"), audit.get("last_labelled_on")
    when = "" if not first else f" on {first}" if first == last else f" between {first} and {last}"
    return (
        f"An expert audit sample of {count(audit['size'], 'query', 'queries')}, a simple random sample of the "
        f"{audit['population']} queries of the batch drawn with seed {audit['seed']} on {audit['drawn_on']}, was "
        f"labelled without the crowd's answers by {who}{when} ({audit['labelled']} of {audit['size']} labelled)."
    )


def annotations_per_item(facts: Mapping[str, Any]) -> str:
    """Votes per query: planned, and as given (the mean over every query, and how many have no human vote)."""
    planned = f"{facts['batch']['assignments_per_query']} annotators per query planned"
    queries = facts["labels"]["queries"]
    distribution = {int(votes): int(n) for votes, n in (facts["agreement"].get("judgments_per_query") or {}).items()}
    voted = sum(n for votes, n in distribution.items() if votes > 0)
    if not queries:
        return f"{planned}; no queries."
    total = sum(votes * n for votes, n in distribution.items())
    unvoted = max(queries - voted, 0)
    text = (
        f"{planned}; {total / queries:.2f} usable human votes per query on average over the {count(queries, 'query')}"
    )
    if voted and unvoted:
        text += f" ({total / voted:.2f} over the {count(voted, 'query')} with votes)"
    machine = machine_labels(facts)
    text += f"; {unvoted} of {count(queries, 'query')} {'has' if unvoted == 1 else 'have'} no human vote"
    if machine:
        text += f" ({count(machine, 'query')} {'carries' if machine == 1 else 'carry'} a machine-accepted label)"
    return text + "."


def demographics(facts: Mapping[str, Any]) -> str | None:
    """Who could take part, where Prolific screeners chose them (None otherwise: the platform does not know)."""
    prolific = facts.get("prolific")
    if not prolific or not prolific.get("filters"):
        return None
    screeners = "; ".join(
        f"{f.get('filter_id')}: {', '.join(str(v) for v in f.get('selected_values', []))}" for f in prolific["filters"]
    )
    return (
        f"Prolific participants chosen by these screeners (filter: selected values): {screeners}. "
        "Individual annotators' demographics were not collected."
    )


def machine_labels(facts: Mapping[str, Any]) -> int:
    """How many of the data's labels a machine produced (machine-accepted queries)."""
    return int(((facts.get("labels") or {}).get("sources") or {}).get("machine-accepted", 0))


def machine_unused(facts: Mapping[str, Any]) -> str | None:
    """For a routing that accepted no label: that a machine labeller ran but none of its labels is in the data."""
    machine = facts.get("machine")
    if not machine or machine_labels(facts) > 0:
        return None
    return (
        f"A machine labeller ({machine['labeller']}, model {machine['model']}) was calibrated, but none of its "
        f"labels was accepted (confidence threshold {number(machine['confidence threshold'])}): every label in "
        "the data comes from people."
    )


def machine_tools(facts: Mapping[str, Any]) -> str | None:
    """The machine labeller, its calibration and the routing's guarantee; None unless machine-accepted labels are
    in the data."""
    machine = facts.get("machine")
    if not machine or machine_labels(facts) <= 0:
        return None
    parts = [
        f"A machine labeller ({machine['labeller']}, model {machine['model']}, prompt/rules "
        f"{machine['prompt / rules version']}) labelled the queries first; its labels at or above confidence "
        f"{number(machine['confidence threshold'])} were accepted ({count(machine['machine-accepted queries'], 'query')}, "
        f"estimated accuracy {number(machine['estimated accuracy of accepted labels'])}, 95% CI "
        f"{interval(machine['its 95% CI'])}) and the rest went to the crowd. Guarantee: {machine['guarantee']}."
    ]
    if "calibration accuracy" in machine:
        kappa = machine["calibration Cohen's kappa"]
        parts.append(
            f"Calibration on a blind crowd-labelled sample ({machine['calibration sample']}): accuracy "
            f"{number(machine['calibration accuracy'])}, Cohen's kappa {number(kappa)} "
            f"(95% CI {interval(machine['kappa 95% CI'])}), expected calibration error "
            f"{number(machine['expected calibration error'])}, Brier score {number(machine['Brier score'])}."
        )
    return " ".join(parts)


def analysis(facts: Mapping[str, Any]) -> str:
    """Agreement with its interval, label counts and sources, set-aside queries, the non-gendered share."""
    agreement, labels, share = facts["agreement"], facts["labels"], facts["non_gendered_share"]
    level = round(100 * agreement["level"])
    counts = ", ".join(f"{LABEL_NAMES[code]} {labels['counts'][code]}" for code in LABELS)
    sources = ", ".join(f"{source} {n}" for source, n in labels["sources"].items()) or "none"
    set_aside = labels["set_aside"]
    return (
        f"Krippendorff's alpha (nominal) {number(agreement['krippendorff_alpha'])}, {level}% bootstrap interval "
        f"{interval(agreement['alpha_ci'])} ({agreement['bootstrap_resamples']} resamples); percent agreement "
        f"{number(agreement['percent_agreement'])}; Fleiss' kappa {number(agreement['fleiss_kappa'])}; "
        f"{agreement['judgments']} usable judgments by {agreement['workers']} annotators. "
        f"{labels['labelled']} of {count(labels['queries'], 'query')} labelled ({counts}; sources: {sources}); "
        f"{set_aside['disputed']} set aside as disputed (tied votes) and {set_aside['too_few_votes']} for too few "
        f"votes. Non-gendered share among labelled queries {number(share['estimate'])}, {level}% "
        f"{share['method']} interval {interval(share['ci'])}."
    )


def biases(facts: Mapping[str, Any]) -> list[str]:
    """What may bias the labels, from how they were made."""
    items = [
        "Gender is judged from the query text alone, by annotators' reading of it; four categories "
        "(non-gendered, female, male, other or multiple genders) cannot represent every gender identity.",
        "Majority vote among a few annotators: a label reflects the annotator pool's reading, which the "
        "agreement figures bound but do not remove.",
    ]
    if facts["pool"] is not None:
        items.append(
            "The queries were pooled for the runs' rank bias, so they over-represent queries on which rankers "
            "differ by gender; shares are not those of the source query log."
        )
    if machine_tools(facts):
        items.append(
            "Machine-accepted labels were not seen by the crowd; their accuracy is estimated on a blind sample "
            "(see the machine annotation tools)."
        )
    return items


def limitations(facts: Mapping[str, Any]) -> list[str]:
    """What a reuser must not read into the data."""
    set_aside = facts["labels"]["set_aside"]
    return [
        f"{count(set_aside['disputed'] + set_aside['too_few_votes'], 'query')} "
        f"{'has' if set_aside['disputed'] + set_aside['too_few_votes'] == 1 else 'have'} no label "
        "(disputed or too few votes); "
        "they are kept in the queries configuration with their status, never as labelled.",
        "English queries only; the labels describe the query text, not the searcher.",
    ]


def personal_information(facts: Mapping[str, Any]) -> str:
    """What personal data the files hold: none of the annotators; the queries' text as published."""
    return (
        "Annotators appear only under pseudonyms made for this dataset (in the optional judgments "
        "configuration); no worker id, name or demographic attribute is included. The query text is "
        "taken as published in the source query set and may mention people."
    )


def use_cases(facts: Mapping[str, Any]) -> list[str]:
    """What the dataset is for."""
    return [
        "Measuring gender bias of ranking models (RaB, ARaB, NFaiRR, TExFAIR) on the non-gendered queries.",
        "Training and evaluating classifiers of a query's gender reference.",
        "Studying annotator agreement on gender judgments (aggregated and judgments configurations).",
    ]


def out_of_scope(facts: Mapping[str, Any]) -> list[str]:
    """What the dataset must not be used for, from how it was made."""
    items = [
        "Inferring or assigning the gender of a person (a searcher, an annotator or anyone a query names): the "
        "labels describe the query text only.",
        "Treating the four classes as a complete account of gender identity.",
        "Estimating how often a search log's queries refer to a gender"
        + (
            ": the queries were pooled for the runs' rank bias, not sampled from the log."
            if facts["pool"] is not None
            else ", unless the query set is a random sample of that log."
        ),
    ]
    if machine_labels(facts):
        items.append(
            "Using the machine-accepted labels (labelled_by = machine) as human judgments, e.g. to measure "
            "annotator agreement or to evaluate the same machine labeller."
        )
    return items


def contact(facts: Mapping[str, Any]) -> str:
    """Where to report an error: the researcher's, who maintains the dataset (``rai:dataReleaseMaintenancePlan``)."""
    return (
        f"The researchers who published batch {facts['batch']['name']!r} maintain this dataset; they add their "
        "address here before publishing. Report a wrong label with its qid: each label's source and who made it "
        "(`label_source`, `labelled_by`) say how it was made."
    )
