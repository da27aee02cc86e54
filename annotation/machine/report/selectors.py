"""What the blind calibration sample says: the calibration report (:func:`calibration_report`), what it
is kept under (:func:`report_version`, :func:`kept_report`), and every labelled query's probability of
each label (:func:`label_probabilities`). Read-only: the report job (:mod:`annotation.machine.services.background`)
keeps the report.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from django.db.models import Count, Max, Q

from annotation.crowd.selectors import counts_answers
from annotation.machine.selectors import (
    CalibrationSample,
    MachineLabel,
    calibration_batch,
    machine_gold_labels,
    machine_labels,
    read_sample,
    sample_chain,
)
from annotation.models import Adjudication, Assignment, Batch, EchoRestore, Judgment, PreLabel
from annotation.results.selectors.cache import remembered
from annotation.results.selectors.gold import gold_discarded_assignments, gold_judgments, gold_labels
from annotation.results.selectors.labels import ADJUDICATED, MACHINE, BatchAnswers, labels_with_sources, latest_routing
from core.errors import StateError
from genderbias.labels import LABEL_NAMES, LABELS


def report_version(batch: Batch) -> str | None:
    """A key that changes whenever :func:`calibration_report` of ``batch`` may (None without a sample):
    every link of the sample, their answers, reviews and rulings, the machine's labels, the routing in
    force and the echo restorations. A page that refreshes itself recomputes only when there is something new."""
    sample = calibration_batch(batch)
    if sample is None:
        return None
    chain = [link.pk for link in sample_chain(sample)]
    usable = counts_answers()  # the results' own rule (failed gold kept where the batch keeps it)
    work = Assignment.objects.filter(hit__batch__in=chain).aggregate(
        n=Count("id"),
        # by state, as answers_version: voiding or rejecting an answer changes neither count nor times
        usable=Count("id", filter=usable),
        approved=Count("id", filter=Q(status=Assignment.Status.APPROVED)),
        submitted=Max("submitted_at"),
        reviewed=Max("reviewed_at"),
    )
    rulings = Adjudication.objects.filter(batch_query__batch__in=chain).aggregate(n=Count("id"), last=Max("decided_at"))
    labelled = PreLabel.objects.filter(batch_query__batch=batch).aggregate(n=Count("id"), last=Max("created"))
    routing = latest_routing(batch)
    restored = sorted(EchoRestore.objects.filter(batch=batch).values_list("worker_id", flat=True))
    state = "|".join(
        str(v)
        for v in (
            ",".join(map(str, chain)),
            *work.values(),
            *rulings.values(),
            *labelled.values(),
            routing.pk if routing else None,
            restored,
        )
    )
    return hashlib.sha256(state.encode()).hexdigest()[:32]


def report_key(batch: Batch, version: str) -> str:
    """The results cache's key of ``batch``'s calibration report at ``version``; bump "v4" when the
    report's shape changes (never serve an older one)."""
    return f"calibration-report:v4:{batch.pk}:{version}"


def report_generation(batch: Batch, version: str) -> tuple[str, str]:
    """The results cache's generation of that report: storing it drops the batch's older versions."""
    return (f"calibration-report-{batch.pk}", version)


class _NotKept(Exception):
    """Raised in place of computing: :func:`kept_report` only reads."""


def kept_report(batch: Batch, version: str) -> dict[str, Any] | None:
    """The calibration report with its figures as the report's job kept it at ``version``, or None:
    a read, never the computation."""

    def missing() -> dict[str, Any]:
        raise _NotKept

    try:
        return remembered(report_key(batch, version), missing, generation=report_generation(batch, version))
    except _NotKept:
        return None


#: Fewer crowd-labelled sample queries than this and no figure is computed.
MIN_CALIBRATED = 10


#: The steps of :func:`calibration_report`, in order, as its ``progress`` names them (a job's page shows them).
REPORT_STEPS = (
    "reading the sample's answers",
    "the machine against the crowd (accuracy, κ, calibration; bootstrap)",
    "the Alternative Annotator Test",
    "the crowd's measured reliability (the crowd model refitted in every bootstrap draw)",
    "each category's share of the batch (PPI++)",
)


def calibration_report(
    batch: Batch,
    labeller: str | None = None,
    *,
    bootstrap: int = 2000,
    progress: Callable[..., None] | None = None,
) -> dict[str, Any]:
    """The machine against the crowd's labels on the blind sample, JSON-ready: accuracy, kappa,
    ``per_category``, ``confusion`` (rows: crowd, columns: machine, :data:`LABELS` order), calibration
    (``ece``, ``brier``, ``reliability``), ``alt_test``, ``proportions`` (PPI++), ``against_truth``
    (:mod:`genderbias.crowd.reliability`), ``routing_ceiling``, ``echo``. ``StateError`` below
    :data:`MIN_CALIBRATED` crowd labels. ``progress``: called with each of :data:`REPORT_STEPS`, and
    ``(step, refitted, bootstrap)`` as the crowd model's bootstrap refits go."""
    from genderbias.machine.calibration_statistics import calibration_figures
    from genderbias.machine.proportions import category_proportions

    step = progress or (lambda name, *counts: None)
    step(REPORT_STEPS[0])
    sample = read_sample(batch, labeller)
    report: dict[str, Any] = sample.identity.as_dict() | {
        "batch": batch.name,
        "sample_batch": sample.sample_batch.name,
        "n": len(sample.qids),
        "pending": sample.pending,
        "labels": list(LABELS),
        "label_names": dict(LABEL_NAMES),  # the codes' full names, as pages and tables show them
    }
    if len(sample.qids) < MIN_CALIBRATED:
        raise StateError(
            f"the calibration sample {sample.sample_batch.name!r} has {len(sample.qids)} crowd-labelled "
            f"queries ({sample.pending} still without a label); at least {MIN_CALIBRATED} are needed"
        )
    step(REPORT_STEPS[1])
    figures = calibration_figures(
        sample.machine, sample.confidence, sample.human, weights=sample.weights, bootstrap=bootstrap
    )
    report |= figures.as_dict()
    report["n"] = len(sample.qids)
    step(REPORT_STEPS[2])
    report["alt_test"] = _alt_test(batch, sample)
    step(REPORT_STEPS[3])
    report["against_truth"] = _against_truth(
        batch, sample, bootstrap=bootstrap, progress=lambda done, total: step(REPORT_STEPS[3], done, total)
    )
    report["routing_ceiling"] = routing_ceiling_of(batch, sample, report["against_truth"])
    step(REPORT_STEPS[4])
    rest_labels = [m.label for m in sample.rest.values()]
    report["proportions"] = category_proportions(sample.human, sample.machine, rest_labels, weights=sample.weights)
    return report | {"echo": sample.echo.as_dict() if sample.echo is not None else None}


def routing_ceiling_of(batch: Batch, sample: CalibrationSample, figures: dict[str, Any]) -> dict[str, Any]:
    """The best agreement with the sample's reference label any machine can expect (a query without a
    decisive label an error), under the crowd model of ``figures`` (``against_truth``), with the sample's
    rule and with the first votes alone; ``value`` None without a fitted model."""
    from genderbias.crowd.simulation.escalation import ceiling_by_label
    from genderbias.crowd.simulation.workers import crowd_from_figures

    rule = sample.reference
    try:
        model = crowd_from_figures(figures)
    except ValueError:
        return {"value": None, "first_votes": None, "by_label": {}, "rule": rule.describe()}
    per_hit = batch.queries_per_hit
    shares = model.priors()
    by_label = ceiling_by_label(model, rule, queries_per_hit=per_hit)
    first = ceiling_by_label(model, replace(rule, cap=rule.votes), queries_per_hit=per_hit)
    return {
        "value": float(shares @ by_label),
        "first_votes": float(shares @ first),
        "by_label": dict(zip(model.labels, by_label.tolist(), strict=True)),
        "rule": rule.describe(),
    }


def _sample_machine(batch: Batch, sample: CalibrationSample) -> dict[str, MachineLabel]:
    """The machine's labels of *every* sampled query, answered or not (training queries left out): the
    figures against the truth and the alt-test use the votes of them all."""
    machine = machine_labels(batch, sample.identity)
    return {q: machine[q] for q in sample.stratum_of if q in machine and not machine[q].in_training}


def _alt_test(batch: Batch, sample: CalibrationSample) -> dict[str, Any]:
    """The alt-test on every sampled query with two or more votes, as its authors define it: split ones
    too, since it compares annotators with each other, not with the majority (rates over the whole sample)."""
    from genderbias.machine.alternative_annotator import alt_test

    machine = {q: m.label for q, m in _sample_machine(batch, sample).items()}
    humans: dict[str, dict[str, str]] = {}
    for item, worker, label in sample.votes.itertuples(index=False):
        if item in machine:
            humans.setdefault(str(worker), {})[str(item)] = label
    return alt_test(humans, machine, sample_size=len(sample.stratum_of)).as_dict()


def _gold_votes(chain: list[Batch]) -> tuple[Any, dict[str, str]]:
    """The gold questions' usable votes on the sample and their known labels: what seeds Dawid–Skene
    against the truth. Each answer is an item of its own, ``gold:<qid>:<assignment>`` (Dawid–Skene takes
    one vote per worker and item, and a worker meets a gold question in every HIT). The same assignments
    as the real votes (``counts_answers``), so they describe the work that counts (a little optimistic:
    they passed the gold check)."""
    import pandas as pd

    rows = Judgment.objects.filter(
        counts_answers("assignment__"),
        batch_query__batch__in=chain,
        batch_query__is_gold=True,
        label__isnull=False,
    ).values_list(
        "batch_query__qid", "assignment_id", "assignment__worker__pseudonym", "label", "batch_query__gold_label"
    )
    rows = [(f"gold:{qid}:{assignment}", worker, label, known) for qid, assignment, worker, label, known in rows]
    frame = pd.DataFrame([row[:3] for row in rows], columns=["item", "worker", "label"])
    return frame, {item: known for item, _, _, known in rows if known}


def fitted_crowd(batch: Batch, sample: CalibrationSample) -> dict[str, Any]:
    """The crowd model fitted to the sample's votes (``against_truth`` without its bootstrap), as routing's
    ceiling and ``route_audit --crowd fitted`` simulate it; StateError without votes."""
    if sample.votes is None or not len(sample.votes):
        raise StateError(f"the calibration sample {sample.sample_batch.name!r} has no votes yet")
    return _against_truth(batch, sample, bootstrap=0)


def _against_truth(
    batch: Batch, sample: CalibrationSample, *, bootstrap: int, progress: Callable[[int, int], None] | None = None
) -> dict[str, Any]:
    """What the crowd's measured reliability says (:func:`genderbias.crowd.reliability.crowd_reliability`)
    on every sampled query with a vote and a machine label, weighted N_s / n_s over the stratum's voted ones."""
    import pandas as pd

    from genderbias.crowd.reliability import crowd_reliability
    from genderbias.crowd.shared_errors import shared_errors

    stratum_of = sample.stratum_of
    voted = set(sample.votes["item"].astype(str))
    machine = {q: m.label for q, m in _sample_machine(batch, sample).items() if q in voted}
    per_stratum = Counter(stratum_of[q] for q in machine)
    first = (sample.chain or [sample.sample_batch])[0].derivation
    population = {s["label"]: s["population"] for s in first["strata"]}
    weights = {q: population[stratum_of[q]] / per_stratum[stratum_of[q]] for q in machine}
    gold_frame, gold = _gold_votes(sample.chain or [sample.sample_batch])
    # Every vote on the sample estimates the workers, also on queries not assessed here.
    judgments = pd.concat([sample.votes, gold_frame], ignore_index=True).astype(str)
    figures = crowd_reliability(
        judgments,
        machine,
        weights,
        {q: stratum_of[q] for q in machine},
        votes_per_query=batch.assignments_per_query,
        gold=gold,
        bootstrap=bootstrap,
        progress=progress,
    )
    # The assumption under the de-noised accuracy, tested where the truth is known: each gold answer's
    # item is gold:<qid>:<assignment>.
    questions = {item: item[len("gold:") : item.rindex(":")] for item in gold}
    known = {questions[item]: label for item, label in gold.items()}
    answers = [(questions[item], label) for item, label in gold_frame[["item", "label"]].itertuples(index=False)]
    return figures.as_dict() | {
        "shared_errors": shared_errors(answers, known, machine_gold_labels(batch, sample.identity))
    }


@dataclass(frozen=True)
class LabelProbabilities:
    """Every labelled query's probability of each label (:mod:`genderbias.crowd.label_probabilities`)."""

    table: Any  #: pandas frame, qid × :data:`LABELS`, rows summing to 1
    source: dict[str, str]  #: qid -> its final label's source (:data:`annotation.results.selectors.labels.SOURCES`)
    label: dict[str, str]  #: qid -> its final label (what the export writes)
    calibrated: bool  #: machine-accepted labels were calibrated on a blind sample (else: the machine's confidence)
    texts: dict[str, str]  #: qid -> query text, every query of the batch (gold left out), batch order
    version: str  #: the batch's answers version when read (:func:`annotation.results.selectors.labels.answers_version`)
    #: The crowd model behind ``table`` (:class:`genderbias.crowd.label_probabilities.LabelModel`):
    #: its ``draws`` refit the crowd's Dawid-Skene per bootstrap draw.
    model: Any = None
    #: How far the crowd's intervals can be trusted (:func:`genderbias.crowd.label_probabilities.crowd_quality`),
    #: None without crowd answers.
    quality: dict[str, Any] | None = None

    @property
    def non_gendered(self) -> list[str]:
        """The point-estimate set: queries whose final label is non-gendered, in batch order."""
        return [q for q in self.texts if self.label.get(q) == "n"]


def label_probabilities(batch: Batch) -> LabelProbabilities:
    """The probabilities behind a report on ``batch``'s labels: Dawid–Skene's gold-seeded posterior for
    the crowd's queries, certainty for rulings, the calibration sample's band distribution for accepted
    machine labels (without a readable sample: the machine's confidence, ``calibrated`` False)."""
    import pandas as pd

    from genderbias.crowd import label_probabilities as lp

    answers = BatchAnswers(batch)
    final = labels_with_sources(batch, answers)
    frame, gold, discarded = answers.frame, {}, 0
    if not frame.empty:
        gold = gold_labels(batch)
        frame = frame if not gold else pd.concat([frame, gold_judgments(batch)], ignore_index=True)
        discarded = gold_discarded_assignments(batch)
    rulings = sorted(q for q, s in final.items() if s.source == ADJUDICATED)
    parts = [pd.DataFrame(lp.one_hot(LABELS, [final[q].label for q in rulings]), index=rulings, columns=LABELS)]
    accepted = sorted(q for q, s in final.items() if s.source == MACHINE)
    calibrated = True
    if accepted:
        machine = [final[q].label for q in accepted]
        confidence = [final[q].confidence or 0.0 for q in accepted]
        try:
            sample = read_sample(batch, latest_routing(batch).labeller)
        except StateError:
            sample = None
        if sample is not None and sample.qids:
            rows = lp.band_distributions(
                LABELS, sample.machine, sample.confidence, sample.human, sample.weights, machine, confidence
            )
        else:
            calibrated = False
            rows = lp.confidence_rows(LABELS, machine, confidence)
        parts.append(pd.DataFrame(rows, index=accepted, columns=LABELS))
    others = [part for part in parts if len(part)]
    model = lp.LabelModel.fit(
        frame.rename(columns={"item": "task"}),
        gold,
        others=pd.concat(others) if others else None,
        discarded=discarded,
        labels=LABELS,
    )
    return LabelProbabilities(
        table=model.table,
        model=model,
        quality=model.quality,
        source={q: s.source for q, s in final.items()},
        label={q: s.label for q, s in final.items()},
        calibrated=calibrated,
        texts=dict(batch.queries.filter(is_gold=False).order_by("position").values_list("qid", "text")),
        version=answers.version,
    )
