"""The metrics paragraph of a paper bundle's ``methods.tex``, written from the report's settings
(:func:`publishing.services.records.report_settings`' keys): what was measured, how, and how runs were compared,
every method cited with ``\\cite`` (keys of :data:`publishing.bibliography.ENTRIES`). Pure."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from core import methods
from genderbias.ranking.defaults import DEFAULT_EXPOSURE_FORM, TIE_DRAWS
from genderbias.ranking.vocabulary import form_statement
from publishing.latex import breakable, escape, prose


def listed(items: Iterable[object], conjunction: str = "and") -> str:
    """``a, b and c``: the one way the methods text lists things."""
    items = [str(item) for item in items]
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + f" {conjunction} " + items[-1]


def is_msmarco(*sources: str | None) -> bool:
    """Whether a dataset source (``ir_datasets:<id> …``, never a name the researcher chose) is MS MARCO."""
    return any(source and "msmarco" in source.lower().replace("-", "").replace("_", "") for source in sources)


def _collection(collection: dict) -> str:
    """A collection's name, with its ir_datasets source (MS MARCO cited when that is its source)."""
    source = collection.get("dataset_source")
    if not source:
        return breakable(collection["name"])
    cite = " \\cite{bajaj2016}" if is_msmarco(source) else ""
    return (
        f"{breakable(collection['name'])} (from {breakable(source.partition(' (')[0])}{cite})"  # no nested parentheses
    )


def _ties_sentences(settings: dict[str, Any]) -> list[str]:
    """How tied documents (equal scores within a query) were ordered, how many queries they touch,
    and the preset's settings (``settings`` from ``publishing.services.records.report_settings``)."""
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
        f"{breakable(run)} {listed(f'{n} at {k}' for k, n in sorted(by.items(), key=lambda kv: int(kv[0])))}"
        for run, by in tied.items()
        if any(by.values())
    ]
    if counts:
        sentences.append(f"Queries whose top $k$ holds a tied document: {'; '.join(counts)}.")
    sentences.append("Effectiveness follows trec\\_eval's order of ties (ir\\_measures).")
    if settings.get("preset"):
        lines = "; ".join(escape(line) for line in settings.get("preset_lines") or [])
        sentences.append(f"The settings are those of preset {breakable(settings['preset'])}: {lines}.")
    return sentences


def metrics_paragraph(settings: dict[str, Any]) -> str:
    """What was measured and how: the metrics the report holds with their settings, the intervals and the tests."""
    metrics = set(settings["metrics"])
    runs = listed(breakable(run) for run in settings["runs"])
    sentences = [
        f"We measured the runs {runs} on {settings['report_queries']} queries at "
        f"{'cutoffs' if len(settings['cutoffs']) != 1 else 'cutoff'} {listed(settings['cutoffs'])}, documents tokenised by the {escape(settings['tokenizer'])} tokenizer."
    ]
    sentences += _ties_sentences(settings)
    collections = settings.get("collections") or []
    if collections:
        named = [_collection(c) for c in collections]
        sentences.append(
            f"The runs rank the passages of the collection{'s' if len(named) != 1 else ''} {listed(named)}."
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
            f"definitional word list {breakable(settings['wordlist'])} (0 is balanced, positive leans male)."
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
            f"{breakable(settings['representative_wordlist'])} (1 is fair): {'; and '.join(named)}."
        )
    exposure = []
    if "AWRF" in metrics:
        exposure.append("AWRF \\cite{sapiezynski2019}")
    if metrics & {"rKL", "rND", "rRD"}:
        exposure.append("rKL, rND and rRD \\cite{yang2017}")
    if exposure:
        sentences.append(f"Exposure: {listed(exposure)}; {prose(settings['exposure_settings'])}.")
        # Which form was used and how it differs from the papers just cited (genderbias.ranking.vocabulary).
        sentences.append(prose(form_statement(settings.get("exposure_form", DEFAULT_EXPOSURE_FORM), metrics)))
    if settings.get("qrels") and settings.get("measures"):
        unjudged = settings.get("unjudged") or 0
        sentences.append(
            f"Effectiveness ({escape(', '.join(settings['measures']))}) was computed with ir\\_measures "
            f"\\cite{{macavaney2022}} against the relevance judgments {breakable(settings['qrels'])}; "
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
            f"Each run is compared with the baseline {breakable(policy['baseline'])} by a {test}; "
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
