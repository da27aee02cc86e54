"""The methods paragraph of a paper bundle (``methods.tex``), written from the study's facts.

Pure (no Django): :func:`methods_tex` takes the batch's facts exactly as
:func:`annotation.selectors.study_facts` returns them (so every figure — an agreement interval,
a count of rulings, the non-gendered share — is the one the dataset card and the Croissant
fields state; nothing is recomputed here) and the report's settings (:func:`report_settings`'s
keys, gathered by :mod:`publishing.services.paper`). Without a batch the queries were given, and
the paragraph says so (and no more: a batch may have labelled them without exporting this set).

Every method and dataset it names is cited with ``\\cite`` (keys of
:data:`publishing.bibliography.ENTRIES`), and only those it names.
"""

from __future__ import annotations

from typing import Any

from core import methods
from core.figure_notes import SIGN_WARNING
from genderbias.ranking.defaults import DEFAULT_EXPOSURE_FORM, TIE_DRAWS
from genderbias.ranking.vocabulary import form_statement
from publishing.latex import breakable, escape, prose
from publishing.statements import audit_sample, reward_clause

#: The label sources of :func:`annotation.selectors.study_facts` (``labels.sources``), as
#: ``annotation.results.selectors`` names them (this module is pure: it cannot import them).
CROWD, ADJUDICATED, MACHINE = "crowd majority", "adjudicated", "machine-accepted"
SOURCE_ORDER = (CROWD, ADJUDICATED, MACHINE)


def _list(items, conjunction: str = "and") -> str:
    items = [str(item) for item in items]
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + f" {conjunction} " + items[-1]


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
    return _tt(name) + (f" ({escape(detail)}" if detail else ", labelled by the crowd")


def _collection(collection: dict) -> str:
    """A collection's name, with its ir_datasets source (MS MARCO cited when that is its source)."""
    source = collection.get("dataset_source")
    if not source:
        return _tt(collection["name"])
    cite = " \\cite{bajaj2016}" if _is_msmarco(source) else ""
    return f"{_tt(collection['name'])} (from {_tt(source.partition(' (')[0])}{cite})"  # no nested parentheses


def _tt(text: object) -> str:
    """A name in typewriter type that breaks where it must (:func:`publishing.latex.breakable`)."""
    return breakable(text)


def _is_msmarco(*sources: str | None) -> bool:
    """Whether a dataset source (``ir_datasets:<id> …``, never a name the researcher chose) is MS MARCO."""
    return any(source and "msmarco" in source.lower().replace("-", "").replace("_", "") for source in sources)


def _pool_sentence(pool: dict) -> str:
    dataset = f" (queries from {_tt(pool['dataset'])})" if pool.get("dataset") else ""
    runs = _list(_tt(run) for run in pool["runs"])
    return (
        f"The queries were pooled from the runs {runs} on the "
        f"query set {_tt(pool['source'])}{dataset}: for each run, the {pool['depth']} queries whose "
        f"top {pool['rank_cutoff']} documents lean most female and the {pool['depth']} leaning most male by RaB "
        f"\\cite{{rekabsaz2020}} ({escape(pool['magnitude'])} magnitude, word list {_tt(pool['wordlist'])}, "
        f"{escape(pool['tokenizer'])} tokenizer), their union being the pool."
    )


def _crowd_queries(facts: dict) -> int:
    """How many queries the crowd labelled: all of them, or those no machine label was accepted for."""
    return facts["labels"]["queries"] - (facts["labels"].get("sources") or {}).get(MACHINE, 0)


def _crowd_sentences(facts: dict) -> list[str]:
    batch, quality, labels = facts["batch"], facts["quality"], facts["labels"]
    per_task = batch["queries_per_hit"]
    names = _list((escape(name.lower()) for name in labels["names"].values()), "or")
    cost = batch.get("cost")
    estimate = cost.get("total") if isinstance(cost, dict) else cost
    if batch.get("spent") is not None:  # what was paid (the crowd batches of a machine-labelled one)
        paid = f"; {escape(batch['spent'])} USD spent in all"
    elif estimate and not facts.get("machine"):  # a machine-labelled batch's own estimate is never spent
        paid = f"; estimated cost at creation {escape(estimate)} USD"
    else:
        paid = ""
    crowd = _crowd_queries(facts)
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
    model = f", model {_tt(machine['model'])}" if machine.get("model") else ""
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
        f"({_tt(named['source'])}, licence {escape(named['licence'])})"
    )


def annotation_paragraph(facts: dict[str, Any] | None, settings: dict[str, Any]) -> str:
    """How the queries were chosen and labelled (``facts``: the batch's study facts), or that they were given."""
    if facts is None:
        source = settings.get("dataset_source")
        cite = " \\cite{bajaj2016}" if _is_msmarco(source) else ""
        origin = f", from {_tt(source)}{cite}" if source else cite
        if settings.get("named_set"):
            origin = f", {_named_set(settings['named_set'], cite)}"
        return f"The {settings['queries']} queries of the query set {_tt(settings['query_set'])}{origin} were given."
    sentences = []
    if facts.get("pool"):
        sentences.append(_pool_sentence(facts["pool"]))
    else:
        sentences.append(f"The queries are those of the query set {_tt(facts['batch']['source'])}.")
    pool = facts.get("pool") or {}
    if _is_msmarco(pool.get("dataset"), facts.get("source_dataset")):
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
            f"the batch's export wrote as the query set {_tt(settings['query_set'])}."
        )
    drift = settings.get("labels_drift")
    if drift:  # a comment a reader of the source sees, and the sentence itself
        return "% NOTE: the labels changed after the report was built.\n" + " ".join(sentences) + " " + escape(drift)
    return " ".join(sentences)


def _ties_sentences(settings: dict[str, Any]) -> list[str]:
    """How tied documents (equal scores within a query) were ordered, how many queries they touch,
    and the preset's settings (``settings`` from ``publishing.services.paper.report_settings``)."""
    ties = settings.get("ties")
    if ties is None:
        return []
    if ties == "tie-aware":
        sentences = [
            "Every bias figure is its expectation over all orders of tied documents (equal scores within a "
            "query): for RaB, ARaB and NFaiRR each rank's value is the mean over its tie group "
            "\\cite{mcsherry2008}, exactly; TExFAIR and the exposure measures are averaged over every order of "
            f"the tied top documents, or {TIE_DRAWS} drawn where there are more; intervals and tests are built on these "
            "values."
        ]
    elif ties == "trec_eval":
        sentences = ["Tied documents (equal scores within a query) were ordered by docid descending, as trec_eval."]
    else:
        sentences = ["Tied documents (equal scores within a query) were taken in the runs' own order."]
    tied = settings.get("tied_queries") or {}
    counts = [
        f"{_tt(run)} {_list(f'{n} at {k}' for k, n in sorted(by.items(), key=lambda kv: int(kv[0])))}"
        for run, by in tied.items()
        if any(by.values())
    ]
    if counts:
        sentences.append(f"Queries whose top $k$ holds a tied document: {'; '.join(counts)}.")
    sentences.append("Effectiveness follows trec\\_eval's order of ties (ir\\_measures).")
    if settings.get("preset"):
        lines = "; ".join(escape(line) for line in settings.get("preset_lines") or [])
        sentences.append(f"The settings are those of preset {_tt(settings['preset'])}: {lines}.")
    return sentences


def metrics_paragraph(settings: dict[str, Any]) -> str:
    """What was measured and how: the metrics the report holds with their settings, the intervals and the tests."""
    metrics = set(settings["metrics"])
    runs = _list(_tt(run) for run in settings["runs"])
    sentences = [
        f"We measured the runs {runs} on {settings['report_queries']} queries at "
        f"{'cutoffs' if len(settings['cutoffs']) != 1 else 'cutoff'} {_list(settings['cutoffs'])}, documents tokenised by the {escape(settings['tokenizer'])} tokenizer."
    ]
    sentences += _ties_sentences(settings)
    collections = settings.get("collections") or []
    if collections:
        named = [_collection(c) for c in collections]
        sentences.append(
            f"The runs rank the passages of the collection{'s' if len(named) != 1 else ''} {_list(named)}."
        )
    if settings.get("on_batch"):
        # The methods that computed this report (its stored versions), not today's (core.methods).
        used = settings.get("methods") or {}
        crowd_model = escape(methods.describe("crowd_model", used.get("crowd_model")))
        chosen = settings.get("label_interval") or {}
        carried = (
            "and its interval is the prediction-powered (PPI++) interval on an expert audit sample, the crowd's "
            "label as the prediction"
            if chosen.get("kind") == "audit"
            else "and its interval carries that uncertainty as well as the queries' sampling, the crowd model being "
            "refitted in every bootstrap resample"
        )
        sentences.append(
            "The queries are those labelled non-gendered; each value is also corrected for the labels' "
            "uncertainty, every judged query weighted by its label probabilities (the crowd's Dawid--Skene "
            f"posterior \\cite{{dawid1979}} with priors, {crowd_model}, one-hot for a ruling, "
            f"the calibration sample's for a machine label), {carried}."
        )
        # Only what was measured on this study: the construction, and the crowd model's own check on
        # its answers (simulated coverages are the docs' business, not this paper's).
        interval = escape(methods.describe("label_interval", used.get("label_interval")))
        # Which interval the label-corrected figures got and why (genderbias.crowd.figure_intervals): with an
        # audit sample, not the crowd model's.
        if chosen.get("kind") != "audit":
            sentences.append(f"Intervals with labels are the {interval}.")
        if chosen.get("sentence"):
            sentences.append(f"Label-corrected intervals: {escape(chosen['sentence'])}.")
        sentences += _crowd_quality_sentences(settings.get("crowd_quality"))
    if metrics & {"RaB", "ARaB"}:
        sentences.append(
            "Rank bias: RaB and ARaB \\cite{rekabsaz2020} with term-frequency and Boolean magnitudes over the "
            f"definitional word list {_tt(settings['wordlist'])} (0 is balanced, positive leans male)."
        )
    if metrics & {"NFaiRR", "TExFAIR"}:
        named = []
        if "NFaiRR" in metrics:  # the normalisation's text has parentheses of its own: none around it
            named.append(
                f"NFaiRR \\cite{{rekabsaz2021}} normalised {prose(settings['nfairr_normalisation'])}, a document "
                f"with at most $\\tau = {settings['threshold']:g}$ representative words counting as neutral"
            )
        if "TExFAIR" in metrics:
            named.append("TExFAIR \\cite{abolghasemi2024}")
        sentences.append(
            f"Fairness of representation, with the representative word list "
            f"{_tt(settings['representative_wordlist'])} (1 is fair): {'; and '.join(named)}."
        )
    exposure = []
    if "AWRF" in metrics:
        exposure.append("AWRF \\cite{sapiezynski2019}")
    if metrics & {"rKL", "rND", "rRD"}:
        exposure.append("rKL, rND and rRD \\cite{yang2017}")
    if exposure:
        sentences.append(f"Exposure: {_list(exposure)}; {prose(settings['exposure_settings'])}.")
        # Which form was used and how it differs from the papers just cited (genderbias.ranking.vocabulary).
        sentences.append(prose(form_statement(settings.get("exposure_form", DEFAULT_EXPOSURE_FORM), metrics)))
    if settings.get("qrels") and settings.get("measures"):
        unjudged = settings.get("unjudged") or 0
        sentences.append(
            f"Effectiveness ({escape(', '.join(settings['measures']))}) was computed with ir\\_measures "
            f"\\cite{{macavaney2022}} against the relevance judgments {_tt(settings['qrels'])}; "
            + (
                "a judged query a run did not return is left out of that run's means"
                if settings.get("unreturned_left_out")
                else "a judged query a run did not return counts as 0"
            )
            + (
                f", and the {unjudged} unjudged quer{'y is' if unjudged == 1 else 'ies are'} left out of the means"
                if unjudged
                else ""
            )
            + "."
        )
    sentences.append(
        f"Intervals are 95\\% percentile bootstrap intervals over the queries \\cite{{efron1979}} "
        f"({settings['bootstrap_samples']} resamples, seed {settings['seed']})."
    )
    policy = settings.get("policy")
    if policy:
        combined = settings.get("on_batch")
        test = (
            escape(policy["test"])
            if combined
            else escape(policy["test"]).replace("paired t-test", "paired $t$-test \\cite{student1908}")
        )
        sentences.append(
            f"Each run is compared with the baseline {_tt(policy['baseline'])} by a {test}; "
            f"family: {escape(policy['family'])}; {escape(policy['correction'])}-corrected \\cite{{holm1979}}; "
            f"significant at $p < {policy['alpha']}$."
        )
    sentences.append(f"Software: {escape(settings['software_version'])}.")
    return " ".join(sentences)


def _crowd_quality_sentences(quality: dict[str, Any] | None) -> list[str]:
    """The crowd's informativeness, and the warning when it is below the simulated threshold."""
    if not quality or quality.get("information") is None:
        return []
    said = (
        f"The crowd's answers carry {quality['information']:.2f} bits of information about the true label "
        f"per answer (mean over {quality['workers']} workers, weighted by their answers)"
    )
    if quality.get("warning"):
        reasons = quality.get("reasons") or ["information"]
        sentences = []
        if "information" in reasons:
            sentences.append(
                said + f", below the crowd-quality check's threshold of {quality['threshold']:.2f} bits: the "
                "label-corrected intervals may be too narrow."
            )
        else:
            sentences.append(said + ".")
        if "misfit" in reasons and quality.get("split"):
            split = quality["split"]
            sentences.append(
                f"The crowd model does not fit the answers: {split['observed']:.0f} queries had no two answers alike "
                f"where replicate crowds drawn from the fitted model had {split['expected']:.0f} "
                f"(s.d. {split['sd']:.1f}), so the answers to a query are not independent given its label and the "
                "label-corrected intervals may be too narrow."
            )
        if "sparse" in reasons:
            sentences.append(
                f"{quality['sparse'] * 100:.0f}\\% of the answers came from workers with fewer than "
                f"{quality['min_worker_answers']} answers, whose reliability the crowd model estimates from too few: "
                "the label-corrected intervals may be too narrow."
            )
        if "selected" in reasons and quality.get("discarded"):
            n = quality["discarded"]
            sentences.append(
                f"The other answers of {n} task{'' if n == 1 else 's'} that failed the gold check were discarded, so "
                "the labels come from the tasks that passed (the crowd model read every gold answer): if a worker's "
                "attention varied between tasks, the label-corrected intervals may be too narrow."
            )
        sentences.append(
            "Because of this, each label-corrected interval was joined with itself moved towards where the truth "
            "lies, by the estimate's change when the crowd model's posteriors were tempered as far as they proved "
            "too sure on replicate crowds drawn from the fitted model and refitted, plus twice the bootstrap's "
            "estimate of its bias."
        )
        return sentences
    return [said + ".", *_model_check_sentences(quality)]


def _model_check_sentences(quality: dict[str, Any]) -> list[str]:
    """The crowd model's posterior-predictive check on this study's answers, when it passed."""
    split = quality.get("split")
    if not split:
        return []
    said = (
        f"A posterior-predictive check of the crowd model on these answers found {split['observed']:.0f} queries "
        f"with no two answers alike where replicate crowds drawn from the fitted model had {split['expected']:.0f} "
        f"(s.d. {split['sd']:.1f})"
    )
    gold = quality.get("gold") or {}
    if gold.get("questions", 0) >= 3:
        said += (
            f", and the {gold['questions']} gold questions' shares of right answers scattered as the model allows "
            f"($\\chi^2$ = {gold['chi2']:.1f})"
        )
    return [said + "."]


def methods_tex(facts: dict[str, Any] | None, settings: dict[str, Any]) -> str:
    """``methods.tex``: the annotation paragraph, then the metrics paragraph (LaTeX with ``\\cite``)."""
    header = "% Generated from the study's facts by the platform's paper bundle; edit freely.\n"
    return header + annotation_paragraph(facts, settings) + "\n\n" + metrics_paragraph(settings) + "\n"


def limitations_tex(facts: dict[str, Any] | None, settings: dict[str, Any]) -> str:
    """``limitations.tex``: what a reader should weigh, in the study's own figures (the same facts
    :func:`methods_tex` states): the annotators' agreement, the share of queries set aside as disputed,
    the share of labels a machine gave and the guarantee they carry, the unjudged queries left out of
    effectiveness, and whether the intervals carry the labels' uncertainty."""
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
    """What the order of tied documents leaves open (``settings``' ``tie_moved`` and ``undecided``, from
    :func:`metrics.formatting.figure_notes`): how many figures it moves, and each whose range over the
    orders of ties holds 0, named with its value and range, whose sign the ranking does not decide."""
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
    dataset = f"{named} " if named else "MS MARCO " if _is_msmarco(source) else ""
    kind_text = f"{kind} " if kind else ""
    return (
        f"Gender Bias in the Rankings of {_count_words(runs, 'Retrieval Run', 'Retrieval Runs')} on "
        f"{queries} {kind_text}{dataset}Quer{'ies' if queries != 1 else 'y'}"
    )


def _count_words(n: int, one: str, many: str) -> str:
    """``One Retrieval Run``, ``Three Retrieval Runs``, ``12 Retrieval Runs``: a title's count in words to ten."""
    words = ("No", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine", "Ten")
    return f"{words[n] if 0 <= n < len(words) else n} {one if n == 1 else many}"
