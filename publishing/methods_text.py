"""The methods paragraph of a paper bundle (``methods.tex``), written from the study's facts (pure).

The facts are taken exactly as :func:`annotation.selectors.study_facts` returns them, so every figure is the one the
dataset card and Croissant state (nothing is recomputed here). Without a batch the queries were given, and the
paragraph says so and no more. Every method and dataset it names is cited with ``\\cite``, and only those.
"""

from __future__ import annotations

from typing import Any

from core.figure_notes import SIGN_WARNING
from publishing.latex import breakable, escape
from publishing.metrics_text import is_msmarco, listed, metrics_paragraph
from publishing.statements import audit_sample, reward_clause

#: The label sources of :func:`annotation.selectors.study_facts` (``labels.sources``), as
#: ``annotation.results.selectors`` names them (this module is pure: it cannot import them).
CROWD, ADJUDICATED, MACHINE = "crowd majority", "adjudicated", "machine-accepted"
SOURCE_ORDER = (CROWD, ADJUDICATED, MACHINE)


def _share(value: float | None) -> str:
    return "--" if value is None else rf"{100 * value:.1f}\%"


def _ci(ci) -> str:
    if not ci or ci[0] is None:
        return ""
    return f"$[{ci[0]:.3f}, {ci[1]:.3f}]$"


def _share_ci(ci) -> str:
    """A share's interval in the share's own form (percent)."""
    if not ci or ci[0] is None:
        return ""
    return rf"[{100 * ci[0]:.1f}\%, {100 * ci[1]:.1f}\%]"


def _sample(text: str) -> str:
    """``name (detail)`` as ``\\texttt{name} (detail)``: the caller sets it outside parentheses."""
    name, _, detail = str(text).partition(" (")
    return breakable(name) + (f" ({escape(detail)}" if detail else ", labelled by the crowd")


def _pool_sentence(pool: dict) -> str:
    dataset = f" (queries from {breakable(pool['dataset'])})" if pool.get("dataset") else ""
    runs = listed(breakable(run) for run in pool["runs"])
    return (
        f"The queries were pooled from the runs {runs} on the "
        f"query set {breakable(pool['source'])}{dataset}: for each run, the {pool['depth']} queries whose "
        f"top {pool['rank_cutoff']} documents lean most female and the {pool['depth']} leaning most male by RaB "
        f"\\cite{{rekabsaz2020}} ({escape(pool['magnitude'])} magnitude, word list {breakable(pool['wordlist'])}, "
        f"{escape(pool['tokenizer'])} tokenizer), their union being the pool."
    )


def _crowd_sentences(facts: dict) -> list[str]:
    batch, quality, labels = facts["batch"], facts["quality"], facts["labels"]
    per_task = batch["queries_per_hit"]
    names = listed((escape(name.lower()) for name in labels["names"].values()), "or")
    cost = batch.get("cost")
    estimate = cost.get("total") if isinstance(cost, dict) else cost
    if batch.get("spent") is not None:  # what was paid (the crowd batches of a machine-labelled one)
        paid = f"; {escape(batch['spent'])} USD spent in all"
    elif estimate and not facts.get("machine"):  # a machine-labelled batch's own estimate is never spent
        paid = f"; estimated cost at creation {escape(estimate)} USD"
    else:
        paid = ""
    crowd = labels["queries"] - (labels.get("sources") or {}).get(MACHINE, 0)  # those no machine label was accepted for
    who = (
        f"The {crowd} quer{'y' if crowd == 1 else 'ies'} that went to the crowd were each"
        if facts.get("machine")
        else f"Each of the {labels['queries']} queries was"
    )
    sentences = [
        f"{who} labelled as {names} by "
        f"{batch['assignments_per_query']} {escape(batch['annotators'])} ("
        f"{per_task} quer{'y' if per_task == 1 else 'ies'} per task, "
        # One wording of the reward for the methods, the card and the checklists (nominal in-house).
        + reward_clause(batch.get("provider", ""), batch["reward"], lambda amount: f"{escape(amount)} USD")
        + paid
        + ")."
    ]
    prolific = facts.get("prolific")
    if prolific and prolific.get("filters"):
        screeners = len(prolific["filters"])
        sentences.append(
            f"Participants were screened on Prolific ({screeners} screener{'s' if screeners != 1 else ''})."
        )
    controls = []
    if quality.get("gold_per_hit"):
        controls.append(
            f"{quality['gold_per_hit']} gold question{'s' if quality['gold_per_hit'] != 1 else ''} per task "
            f"(a task passes with at least {_share(quality['gold_pass_fraction'])} of them right; "
            "a failed task's answers are not counted)"
        )
    if quality.get("training_queries"):
        controls.append(
            f"a qualification of {quality['training_queries']} training queries "
            f"(pass mark {_share(quality['training_pass_fraction'])})"
        )
    for key, what in (
        ("warn_gold_accuracy", "workers were flagged below a gold accuracy of"),
        ("block_gold_accuracy", "blocked below a gold accuracy of"),
        ("warn_agreement", "flagged below an agreement with the majority of"),
        ("block_agreement", "blocked below an agreement with the majority of"),
    ):
        if quality.get(key) is not None:
            controls.append(f"{what} {_share(quality[key])}")
    if quality.get("escalate_until"):
        until = str(quality["escalate_until"])
        settled = (
            f"Dawid--Skene's largest posterior \\cite{{dawid1979}} for it reached {escape(until.split(':', 1)[1])}"
            if until.startswith("posterior:")
            else "it had a strict majority"
        )
        escalations = quality["escalations"]
        controls.append(
            "a task with an unsettled query was given one more assignment per round (every query of the task "
            f"gets a vote more) until {settled} or the task had {quality['escalation_cap']} assignments in all "
            f"({escalations} escalation{'s' if escalations != 1 else ''} applied)"
        )
    if controls:
        sentences.append("Quality controls: " + "; ".join(controls) + ".")
    return sentences


def _agreement_sentence(agreement: dict) -> str | None:
    alpha = agreement.get("krippendorff_alpha")
    if alpha is None:
        return None
    ci = _ci(agreement.get("alpha_ci"))
    interval = (
        f" ({100 * agreement['level']:g}\\% CI {ci}, {agreement['bootstrap_resamples']} bootstrap resamples "
        "\\cite{efron1979})"
        if ci
        else ""
    )
    return (
        f"Inter-annotator agreement was Krippendorff's $\\alpha = {alpha:.3f}$ \\cite{{krippendorff2018}}{interval}, "
        f"over {agreement['judgments']} judgments by {agreement['workers']} annotators."
    )


def _labels_sentences(facts: dict) -> list[str]:
    labels = facts["labels"]
    sources = labels.get("sources") or {}
    parts = [
        f"{count} {what}"
        for source, what in (
            (CROWD, "by the crowd's plurality"),
            (ADJUDICATED, "by a researcher's ruling"),
            (MACHINE, "machine-accepted"),
        )
        if (count := sources.get(source))
    ]
    parts += [f"{count} {escape(source)}" for source, count in sources.items() if source not in SOURCE_ORDER]
    set_aside = labels["set_aside"]
    if set_aside["disputed"]:
        parts.append(f"{set_aside['disputed']} set aside as disputed")
    if set_aside["too_few_votes"]:
        parts.append(f"{set_aside['too_few_votes']} set aside for too few votes")
    rule = (
        f"A crowd label is the strict plurality of at least {facts['batch']['min_votes']} usable votes "
        "(ties and queries with too few votes are set aside), replaced by a researcher's ruling where there is one"
    )
    if sources.get(MACHINE):
        rule += "; a machine-accepted label stands as the machine gave it"
    sentences = [
        f"{rule}. Of the {labels['queries']} queries, {labels['labelled']} were labelled"
        + (" (" + ", ".join(parts) + ")" if parts else "")
        + "."
    ]
    share = facts["non_gendered_share"]
    if share.get("estimate") is not None:
        sentences.append(
            f"{share['count']} of the {share['total']} labelled queries ({_share(share['estimate'])}, "
            f"95\\% Wilson score interval \\cite{{wilson1927}} {_share_ci(share['ci'])}) are non-gendered."
        )
    return sentences


def _machine_sentences(machine: dict) -> list[str]:
    model = f", model {breakable(machine['model'])}" if machine.get("model") else ""
    threshold = machine.get("confidence threshold")
    sentences = [
        f"A machine labeller ({escape(machine['labeller'])}{model}, prompt/rules version "
        f"{escape(machine.get('prompt / rules version') or '--')}) labelled the queries first; "
        + (
            f"its labels at confidence {threshold:g} or above were accepted ({machine['machine-accepted queries']} "
            "queries) and the rest went to the crowd."
            if threshold is not None
            else "none of its labels was accepted and every query went to the crowd."
        )
    ]
    if machine.get("calibration sample"):
        kappa_ci = _ci(machine.get("kappa 95% CI"))
        kappa = machine["calibration Cohen's kappa"]
        sentences.append(
            f"On its blind calibration sample {_sample(machine['calibration sample'])}, the machine's "
            f"accuracy was {machine['calibration accuracy']:.3f} and Cohen's $\\kappa$ \\cite{{cohen1960}} "
            f"{kappa:.3f}" + (f" (95\\% CI {kappa_ci})" if kappa_ci else "") + "; "
            f"expected calibration error {machine['expected calibration error']:.3f}, Brier score "
            f"{machine['Brier score']:.3f}. The sample also estimates each label's share of the whole batch by "
            "prediction-powered inference \\cite{angelopoulos2023ppi} in its power-tuned form, PPI++ "
            "\\cite{angelopoulos2023ppiplus}."
        )
    guarantee = machine.get("guarantee") or ""
    certified = machine.get("confidence threshold") is not None and isinstance(machine.get("risk δ"), (int, float))
    if certified:
        sentences.append(
            f"Guarantee: {escape(guarantee)} \\cite{{angelopoulos2021ltt}}."
            if "fixed-sequence" in guarantee
            else f"Guarantee: {escape(guarantee)}, certified by fixed-sequence testing \\cite{{angelopoulos2021ltt}}."
        )
    else:
        sentences.append(f"Guarantee: {escape(guarantee)}.")
    accuracy = machine.get("estimated accuracy of accepted labels")
    if accuracy is not None:
        ci = _ci(machine.get("its 95% CI"))
        sentences.append(
            f"The accepted labels' estimated accuracy is {accuracy:.3f}" + (f" (95\\% CI {ci})" if ci else "") + "."
        )
    return sentences


def _named_set(named: dict[str, Any], cite: str = "") -> str:
    """``<name> \\cite{key} (<source>, licence L)``: a named data set, cited, with its licence (MS MARCO's
    citation ``cite`` beside it when its queries are MS MARCO's)."""
    return (
        f"{escape(named['short'])} \\cite{{{named['citation_key']}}}{cite} "
        f"({breakable(named['source'])}, licence {escape(named['licence'])})"
    )


def annotation_paragraph(facts: dict[str, Any] | None, settings: dict[str, Any]) -> str:
    """How the queries were chosen and labelled (``facts``: the batch's study facts), or that they were given."""
    if facts is None:
        source = settings.get("dataset_source")
        cite = " \\cite{bajaj2016}" if is_msmarco(source) else ""
        origin = f", from {breakable(source)}{cite}" if source else cite
        if settings.get("named_set"):
            origin = f", {_named_set(settings['named_set'], cite)}"
        return (
            f"The {settings['queries']} queries of the query set {breakable(settings['query_set'])}{origin} were given."
        )
    sentences = []
    if facts.get("pool"):
        sentences.append(_pool_sentence(facts["pool"]))
    else:
        sentences.append(f"The queries are those of the query set {breakable(facts['batch']['source'])}.")
    pool = facts.get("pool") or {}
    if is_msmarco(pool.get("dataset"), facts.get("source_dataset")):
        sentences[-1] = sentences[-1][:-1] + " (MS MARCO \\cite{bajaj2016})."
    if (facts.get("batch") or {}).get("queries_from"):
        sentences.append(f"The queries come from {_named_set(facts['batch']['queries_from'])}.")
    if facts.get("machine"):
        sentences += _machine_sentences(facts["machine"])
    sentences += _crowd_sentences(facts)
    agreement = _agreement_sentence(facts["agreement"])
    if agreement:
        sentences.append(agreement)
    sentences += _labels_sentences(facts)
    if audit := audit_sample(facts):
        sentences.append(escape(audit))
    export = settings.get("export")
    if export:
        sentences.append(
            f"The report measures the {export['queries']} queries labelled {escape(export['category'])} that "
            f"the batch's export wrote as the query set {breakable(settings['query_set'])}."
        )
    drift = settings.get("labels_drift")
    if drift:  # a comment a reader of the source sees, and the sentence itself
        return "% NOTE: the labels changed after the report was built.\n" + " ".join(sentences) + " " + escape(drift)
    return " ".join(sentences)


def methods_tex(facts: dict[str, Any] | None, settings: dict[str, Any]) -> str:
    """``methods.tex``: the annotation paragraph, then the metrics paragraph (LaTeX with ``\\cite``)."""
    header = "% Generated from the study's facts by the platform's paper bundle; edit freely.\n"
    return header + annotation_paragraph(facts, settings) + "\n\n" + metrics_paragraph(settings) + "\n"


def limitations_tex(facts: dict[str, Any] | None, settings: dict[str, Any]) -> str:
    """``limitations.tex``: what a reader should weigh, in the figures :func:`methods_tex` states (agreement, queries
    set aside, machine labels, unjudged queries, whether the intervals carry the labels' uncertainty)."""
    sentences = []
    if facts is None:
        sentences.append(
            "The queries were given, not labelled on the platform: their gender labels, and how reliable those "
            "are, are the source's; the intervals carry the queries' sampling only"
            + (", not the order of tied documents." if settings.get("tie_moved") else ".")
        )
    else:
        alpha = facts["agreement"].get("krippendorff_alpha")
        if alpha is not None:
            ci = _ci(facts["agreement"].get("alpha_ci"))
            strength = "high" if alpha >= 0.8 else "moderate" if alpha >= 0.667 else "low"
            sentences.append(
                f"Agreement between annotators was {strength} (Krippendorff's $\\alpha = {alpha:.3f}$"
                + (f", 95\\% CI {ci}" if ci else "")
                + "; 0.667 is the lowest value commonly accepted for tentative conclusions \\cite{krippendorff2018})."
            )
        labels = facts["labels"]
        total = labels["queries"] or 0
        disputed = labels["set_aside"]["disputed"]
        few = labels["set_aside"]["too_few_votes"]
        if total:
            sentences.append(
                f"{disputed} of the {total} queries ({_share(disputed / total)}) were set aside as disputed"
                + (f" and {few} ({_share(few / total)}) for too few votes" if few else "")
                + "; the measured set leaves out the queries annotators disagree on, which may differ from the rest."
            )
        machine_count = (labels.get("sources") or {}).get(MACHINE, 0)
        if facts.get("machine") and labels["labelled"]:
            guarantee = facts["machine"].get("guarantee") or "none stated"
            accuracy = facts["machine"].get("estimated accuracy of accepted labels")
            sentences.append(
                f"{machine_count} of the {labels['labelled']} labels ({_share(machine_count / labels['labelled'])}) "
                f"were given by a machine and not checked one by one; they carry the guarantee {escape(guarantee)}"
                + (f" (estimated accuracy {accuracy:.3f})" if accuracy is not None else "")
                + ", a statement about the accepted labels as a whole, not about each."
            )
        sentences.append(
            "The intervals carry the labels' uncertainty as well as the queries' sampling."
            if settings.get("on_batch")
            else "The intervals carry the queries' sampling only, not the uncertainty of the labels that chose "
            "the queries"
            + (" nor the order of tied documents" if settings.get("tie_moved") else "")
            + "; a report on the batch's labels carries the labels' uncertainty too."
        )
    sentences += _ties_limitations(settings)
    unjudged = settings.get("unjudged") or 0
    if settings.get("qrels") and unjudged:
        sentences.append(
            f"{unjudged} of the {settings['report_queries']} queries have no relevance judgments and are left out "
            "of the effectiveness means, which therefore describe fewer queries than the bias measures."
        )
    header = "% Generated from the study's facts by the platform's paper bundle; edit freely.\n"
    return header + " ".join(sentences) + "\n"


def _ties_limitations(settings: dict[str, Any]) -> list[str]:
    """What the order of tied documents leaves open: how many figures it moves, and each whose range over the orders
    of ties holds 0 (the ranking does not decide its sign), with its value and range."""
    moved = settings.get("tie_moved") or 0
    if not moved:
        return []
    said = [
        f"The order of tied documents (equal scores) moves {moved} figure{'s' if moved != 1 else ''}; the "
        "tables give each one's lowest and highest over every order of ties, which the intervals do not carry."
    ]
    undecided = settings.get("undecided") or []
    if undecided:
        listed = "; ".join(
            f"{breakable(row['run'])} {escape(row['metric'])}[{escape(row['variant'])}]@{int(row['cutoff'])} "
            f"${row['value']:.4f}$ (ties ${row['tie_low']:.4f}$ to ${row['tie_high']:.4f}$)"
            for row in undecided
        )
        count = len(undecided)
        said.append(
            f"For {count} of them the range holds 0, so {escape(SIGN_WARNING)} of the bias: read "
            f"{'its' if count == 1 else 'their'} sign as undecided, whatever the interval: {listed}."
        )
    return said


def default_title(facts: dict[str, Any] | None, settings: dict[str, Any]) -> str:
    """The bundle's title when the researcher gives none: what was measured, on what, from the study's
    facts (never the report's internal name)."""
    runs = len(settings.get("runs") or [])
    queries = settings.get("report_queries") or settings.get("queries")
    export = settings.get("export") or {}
    kind = export.get("category") or ("non-gendered" if settings.get("on_batch") else "")
    pool = (facts or {}).get("pool") or {}
    source = settings.get("dataset_source") or (facts or {}).get("source_dataset") or pool.get("dataset")
    named = (settings.get("named_set") or {}).get("short")
    dataset = f"{named} " if named else "MS MARCO " if is_msmarco(source) else ""
    kind_text = f"{kind} " if kind else ""
    return (
        f"Gender Bias in the Rankings of {_count_words(runs, 'Retrieval Run', 'Retrieval Runs')} on "
        f"{queries} {kind_text}{dataset}Quer{'ies' if queries != 1 else 'y'}"
    )


def _count_words(n: int, one: str, many: str) -> str:
    """``One Retrieval Run``, ``Three Retrieval Runs``, ``12 Retrieval Runs``: a title's count in words to ten."""
    words = ("No", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine", "Ten")
    return f"{words[n] if 0 <= n < len(words) else n} {one if n == 1 else many}"
