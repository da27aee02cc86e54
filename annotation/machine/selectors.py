"""Reads of machine labelling: the machines' runs on a batch, the blind calibration sample read
against a machine with its report, the non-gendered sets by label source.

A batch labelled by a machine first (:mod:`.services.prelabels`) stays a draft; its crowd
work goes through *derived* batches (``Batch.parent``): first a calibration sample
(:mod:`.services.calibration` draws it and makes it a batch), then the routed queries
(:mod:`.services.routing`). An extended sample is a chain of calibration batches
(:func:`sample_chain`); every figure of the report is computed over the whole chain.

:func:`calibration_report` compares the machine with the crowd's labels of the sample
("a researcher's ruling first, else the majority"): accuracy, Cohen's kappa, precision
and recall per category, confusion matrix, calibration (ECE, Brier, reliability bins),
the Alternative Annotator Test on the individual votes, and each category's share of the
whole batch by prediction-powered inference. Each sampled query is weighted by the inverse
of its machine label's sampling rate (N_s / n_s, post-stratified), so the figures estimate
the batch, not the sample. Queries the machine was trained on (``detail["in_training"]``) are left out.

Read-only: nothing here changes state (the writes are in :mod:`.services`).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from django.db.models import Avg, Count, Max, Q

from annotation.crowd.selectors import counts_answers
from annotation.models import Adjudication, Assignment, Batch, EchoRestore, Judgment, PreLabel
from annotation.results.selectors import (
    ADJUDICATED,
    MACHINE,
    BatchAnswers,
    crowd_labels,
    labels_with_sources,
    latest_routing,
    machine_accepted,
    remembered,
)
from core.errors import StateError
from genderbias.labels import LABEL_NAMES, LABELS
from genderbias.machine.echo import ECHO_Z, MIN_ANSWERS, echo_check


@dataclass(frozen=True)
class Identity:
    """Which machine labelled: the pre-labeller's name, its model and its prompt (or rules) version."""

    labeller: str
    model: str
    prompt_version: str

    def as_dict(self) -> dict[str, str]:
        return {"labeller": self.labeller, "model": self.model, "prompt_version": self.prompt_version}

    def __str__(self) -> str:
        return f"{self.labeller} ({self.model}, {self.prompt_version})"


@dataclass(frozen=True)
class MachineLabel:
    label: str
    confidence: float
    in_training: bool = False


def identities(batch: Batch) -> list[Identity]:
    """The machines that labelled ``batch``, the most recent first."""
    rows = (
        PreLabel.objects.filter(batch_query__batch=batch)
        .values_list("labeller", "model", "prompt_version")
        .annotate(latest=Max("created"))
        .order_by("-latest")
    )
    return [Identity(labeller, model, prompt_version) for labeller, model, prompt_version, _ in rows]


def identity_for(batch: Batch, labeller: str | None = None) -> Identity:
    """The most recent machine of ``batch`` (of the pre-labeller ``labeller`` when given)."""
    for identity in identities(batch):
        if labeller in (None, identity.labeller):
            return identity
    which = f"the {labeller} pre-labeller" if labeller else "a machine"
    raise StateError(f"batch {batch.name!r} has no labels from {which} yet; run prelabel first")


def machine_labels(batch: Batch, identity: Identity) -> dict[str, MachineLabel]:
    """``qid -> MachineLabel`` of the batch's queries (gold left out) as ``identity`` labelled them."""
    rows = PreLabel.objects.filter(
        batch_query__batch=batch, batch_query__is_gold=False, **identity.as_dict()
    ).values_list("batch_query__qid", "label", "confidence", "detail")
    return {
        qid: MachineLabel(label, confidence, bool((detail or {}).get("in_training")))
        for qid, label, confidence, detail in rows
    }


def machine_gold_labels(batch: Batch, identity: Identity) -> dict[str, str]:
    """``qid -> label`` of the batch's gold questions as ``identity`` labelled them (pre-labelling labels
    every query of a batch, its gold questions too): where the machine's errors meet the crowd's on a
    known label (:func:`genderbias.crowd.shared_errors.shared_errors`)."""
    rows = PreLabel.objects.filter(batch_query__batch=batch, batch_query__is_gold=True, **identity.as_dict())
    return dict(rows.values_list("batch_query__qid", "label"))


def calibration_batch(batch: Batch) -> Batch | None:
    """The blind calibration sample of ``batch`` in force: its latest calibration batch that was not
    cancelled (the last link when the sample was extended), or None."""
    return (
        batch.derived.filter(purpose=Batch.Purpose.CALIBRATION)
        .exclude(status=Batch.Status.CANCELLED)
        .order_by("-created", "-pk")
        .first()
    )


def sample_chain(sample_batch: Batch) -> list[Batch]:
    """The calibration batches that make up ``sample_batch``'s sample: the first draw, then each
    extension up to ``sample_batch`` itself (``derivation["extends"]``: the link before)."""
    chain = [sample_batch]
    while (previous := chain[-1].derivation.get("extends")) is not None:
        link = Batch.objects.filter(pk=previous).first()
        if link is None or link in chain:
            break
        chain.append(link)
    return chain[::-1]


def drawn_order(chain: list[Batch]) -> list[str]:
    """Every sampled qid of the chain in draw order (a sample made before draw orders were kept:
    the order its qids were recorded in, which was shuffled)."""
    order: list[str] = []
    for link in chain:
        order.extend(link.derivation.get("order") or list(link.derivation["stratum_of"]))
    return order


#: ``derivation["design"]`` of a sample drawn by :func:`genderbias.machine.calibration_sample.random_sample`.
RANDOM_DESIGN = "simple random"
#: ``derivation["draw"]``: every link reads one permutation of the population (the first draw's seed).
PERMUTATION_DRAW = "permutation"


def population_key(qids: Any) -> str:
    """A short fingerprint of a set of qids: the population a sample was drawn from."""
    return hashlib.sha256("\n".join(sorted(qids)).encode()).hexdigest()[:16]


def same_population(first: dict[str, Any], population: Any) -> bool:
    """Whether ``population`` (qids) is the population the first draw (its derivation) was drawn from.

    By its fingerprint when recorded, else (a sample drawn before fingerprints) by its size.
    """
    if "population_key" in first:
        return first["population_key"] == population_key(population)
    recorded = sum(s["population"] for s in first.get("strata", []))
    return recorded == len(population)


@dataclass
class CalibrationSample:
    """The calibration sample read against a machine: what every figure is computed from."""

    batch: Batch
    sample_batch: Batch  #: the last link of the sample (the batch a routing records)
    identity: Identity
    qids: list[str]  #: sampled queries with a crowd label and a machine label, draw order
    machine: list[str]
    confidence: list[float]
    human: list[str]
    weights: list[float]
    pending: int  #: sampled queries without a crowd label yet (unanswered, disputed)
    votes: Any  #: the sample's judgments frame (item, worker, label)
    rest: dict[str, MachineLabel]  #: machine labels of the batch's queries outside the sample
    chain: list[Batch] = field(default_factory=list)  #: the sample's batches, first draw first
    drawn: list[str] = field(default_factory=list)  #: every sampled qid with a machine label, draw order
    crowd: dict[str, str] = field(default_factory=dict)  #: the crowd's label of each labelled sampled qid
    population: dict[str, MachineLabel] = field(default_factory=dict)  #: every routable query (sample included)
    in_training: list[str] = field(default_factory=list)  #: the batch's queries the machine was trained on
    design: str = RANDOM_DESIGN  #: how the sample was drawn (routing's guarantee needs a simple random one)
    planned: int = 0  #: the size of the first draw
    unanswered: int = 0  #: sampled queries still awaiting votes (a split with enough votes is answered)
    #: what "right" means: the sample's final crowd label under this rule (:func:`reference_rule`)
    reference: Any = None
    #: sampled queries with their votes in but no decisive label (yet): escalated, or errors for any machine
    undecided: list[str] = field(default_factory=list)
    extendable: bool = True  #: drawn to be extended (δ split with the betting test); False: drawn whole
    #: the echo check of the sample's workers against this machine (:func:`sample_echo`)
    echo: SampleEcho | None = None
    #: sampled queries decisive on every vote but not once the held-out workers' answers are left out:
    #: no reference label (an error for any machine), and nothing more to wait for
    held_undecided: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class SampleEcho:
    """The echo check of a calibration sample (:mod:`genderbias.machine.echo`): every worker's figures,
    who is held out of the reference (flagged and not restored) and who a researcher restored."""

    workers: list  #: :class:`genderbias.machine.echo.WorkerEcho` of every worker of the sample
    held_out: list[str]  #: pseudonyms whose answers are left out of the reference
    restored: list[str]  #: flagged pseudonyms a researcher put back (:class:`EchoRestore`)
    held_out_answers: int  #: the sample answers left out

    def as_dict(self) -> dict[str, Any]:
        return {
            "z": ECHO_Z,
            "min_answers": MIN_ANSWERS,
            "held_out": self.held_out,
            "restored": self.restored,
            "held_out_answers": self.held_out_answers,
            "flagged": [w.as_dict() for w in self.workers if w.flagged],
            "workers": len(self.workers),
            "text": echo_text(self),
        }


def echo_text(echo: SampleEcho) -> str:
    """Why the reference is what it is, in words (the report, the routing plan, the routing's record)."""
    flagged = [w for w in echo.workers if w.flagged]
    if not flagged:
        return f"Echo check: none of the sample's {len(echo.workers)} workers follows the machine more than people do."
    held = len(echo.held_out)
    text = (
        f"Echo check: {len(flagged)} of the sample's {len(echo.workers)} workers agree with the machine more than "
        f"with the people on the same queries, beyond what the others do (z ≥ {ECHO_Z:g})"
    )
    if held:
        text += (
            f"; {held} {'is' if held == 1 else 'are'} held out of the reference ({echo.held_out_answers} "
            f"answer{'s' if echo.held_out_answers != 1 else ''})"
        )
    if echo.restored:
        text += f"; {len(echo.restored)} restored by a researcher"
    return text + "."


class HeldOutAnswers(BatchAnswers):
    """A sample link's answers without the held-out workers' (the echo check): its own version, so no
    cached figure of the whole answers is taken for these or the other way round."""

    def __init__(self, batch: Batch, held_out: frozenset[str], frame: Any) -> None:
        super().__init__(batch)
        self.held_out = held_out
        self._all = frame

    @cached_property
    def frame(self) -> Any:
        return self._all[~self._all["worker"].isin(self.held_out)].reset_index(drop=True)

    @cached_property
    def version(self) -> str:
        base = super().version
        return hashlib.sha256(f"{base}|held-out:{','.join(sorted(self.held_out))}".encode()).hexdigest()[:32]


def sample_echo(batch: Batch, votes: Any, machine: dict[str, str]) -> SampleEcho:
    """The echo check of ``batch``'s sample votes (a judgments frame) against ``machine`` (qid -> label),
    with the researchers' restorations: depends on the answers and the restorations only."""
    workers = echo_check(votes[["item", "worker", "label"]].itertuples(index=False, name=None), machine)
    restored = set(EchoRestore.objects.filter(batch=batch).values_list("worker__pseudonym", flat=True))
    held = sorted(w.worker for w in workers if w.flagged and w.worker not in restored)
    return SampleEcho(
        workers=workers,
        held_out=held,
        restored=sorted(w.worker for w in workers if w.flagged and w.worker in restored),
        held_out_answers=int(votes["worker"].isin(held).sum()) if len(votes) else 0,
    )


def reference_rule(first: dict[str, Any], votes: int) -> Any:
    """The reference rule a sample was drawn with (its first link's ``derivation["reference"]``): a
    :class:`genderbias.crowd.simulation.escalation.ReferenceRule`. A sample drawn before the rule was
    recorded: ``votes`` votes, no escalation, a strict majority (splits count against the machine)."""
    from genderbias.crowd.simulation.escalation import ReferenceRule

    recorded = first.get("reference")
    if not recorded:
        return ReferenceRule(votes=votes, cap=votes)
    return ReferenceRule(votes=recorded["votes"], cap=recorded["cap"], posterior=recorded.get("posterior"))


def decisive_labels(answers: BatchAnswers, posterior: float | None) -> dict[str, str]:
    """``qid -> label`` of the queries whose crowd label is decisive: a researcher's ruling, or a strict
    majority (with ``posterior``: whose Dawid–Skene posterior is at least that too, as escalation's
    ``posterior:P`` reads it)."""
    labels = answers.labels
    if posterior is None:
        return labels
    rulings = answers.rulings
    fit = answers.dawid_skene
    best = fit.posteriors.max(axis=1) if fit is not None else {}
    return {q: label for q, label in labels.items() if q in rulings or float(best.get(q, 0.0)) >= posterior - 1e-12}


def read_sample(batch: Batch, labeller: str | None = None, *, sample_batch: Batch | None = None) -> CalibrationSample:
    """The calibration sample of ``batch`` with the crowd's labels and ``labeller``'s (default: the
    machine the sample was drawn by); ``sample_batch``: the sample as it was when a routing recorded
    it (its link), not the one in force."""
    from genderbias.machine.calibration_sample import Stratum, stratum_weights

    sample_batch = sample_batch or calibration_batch(batch)
    if sample_batch is None:
        raise StateError(f"batch {batch.name!r} has no calibration sample yet; run calibrate first")
    chain = sample_chain(sample_batch)
    first = chain[0].derivation
    if labeller is None or labeller == first["labeller"]:
        identity = Identity(first["labeller"], first["model"], first["prompt_version"])
    else:
        identity = identity_for(batch, labeller)
    stratum_of: dict[str, str] = {}
    for link in chain:
        stratum_of |= link.derivation["stratum_of"]
    order = drawn_order(chain)
    machine = machine_labels(batch, identity)
    rule = reference_rule(first, batch.assignments_per_query)
    crowd: dict[str, str] = {}
    frames = []
    links = [BatchAnswers(link) for link in chain]
    settled: set[str] = set()  # enough votes for a majority (labelled or a final split)
    for answers in links:
        frames.append(answers.frame)
        votes_of = answers.votes
        if len(votes_of):
            settled |= {str(q) for q in votes_of.index[~votes_of["too_few_votes"]]}
    votes = frames[0] if len(frames) == 1 else _concat(frames)
    population = {q: m for q, m in machine.items() if not m.in_training}
    drawn = [q for q in order if q in population]
    # The echo check: workers who follow this machine more than people do are held out of the reference.
    echo = sample_echo(batch, votes, {q: population[q].label for q in drawn})
    held = frozenset(echo.held_out)
    every_vote: dict[str, str] = {}
    for answers in links:
        if held:
            every_vote |= decisive_labels(answers, rule.posterior)
            answers = HeldOutAnswers(answers.batch, held, answers.frame)
        crowd |= decisive_labels(answers, rule.posterior)
    if held:
        votes = votes[~votes["worker"].isin(held)].reset_index(drop=True)
    qids = [q for q in drawn if q in crowd]
    # Post-stratified weights: N_s / n_s(labelled), N_s from the first draw's record.
    labelled = Counter(stratum_of[q] for q in qids)
    weights_by_stratum = stratum_weights(
        [Stratum(s["label"], s["population"], labelled[s["label"]]) for s in first["strata"]]
    )
    sampled = set(order)
    return CalibrationSample(
        batch=batch,
        sample_batch=sample_batch,
        identity=identity,
        qids=qids,
        machine=[machine[q].label for q in qids],
        confidence=[machine[q].confidence for q in qids],
        human=[crowd[q] for q in qids],
        weights=[weights_by_stratum[stratum_of[q]] for q in qids],
        pending=sum(1 for q in order if q not in crowd),
        unanswered=sum(1 for q in drawn if q not in crowd and q not in settled),
        votes=votes,
        rest={q: m for q, m in population.items() if q not in sampled},
        chain=chain,
        drawn=drawn,
        crowd={q: crowd[q] for q in drawn if q in crowd},
        population=population,
        in_training=sorted(q for q, m in machine.items() if m.in_training),
        design=RANDOM_DESIGN if all(link.derivation.get("design") == RANDOM_DESIGN for link in chain) else "stratified",
        planned=int(first.get("planned", first["requested"])),
        reference=rule,
        undecided=[q for q in drawn if q not in crowd and q in settled and q not in every_vote],
        extendable=bool(first.get("extendable", True)),
        echo=echo,
        held_undecided=[q for q in drawn if q not in crowd and q in every_vote],
    )


def _concat(frames: list) -> Any:
    import pandas as pd

    return pd.concat(frames, ignore_index=True)


def report_version(batch: Batch) -> str | None:
    """A key that changes whenever :func:`calibration_report` of ``batch`` may: every part of the
    sample (an extended sample is a chain: :func:`sample_chain`), their answers and reviews, the
    rulings on them, the machine's labels and the routing in force (None without a sample).

    Lets a page that refreshes itself recompute the report (a bootstrap, the alt-test,
    PPI++) only when there is something new, not on every poll. Keyed on the whole chain, not
    its last link: after ``calibrate --extend`` the earlier part's answers still change the report.
    """
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
    """The results cache's key of ``batch``'s calibration report (with its figures) at ``version``
    (:func:`report_version`); "v4": the report's keys changed (never serve an older shape)."""
    return f"calibration-report:v4:{batch.pk}:{version}"


def report_generation(batch: Batch, version: str) -> tuple[str, str]:
    """The results cache's generation of that report: storing it drops the batch's older versions."""
    return (f"calibration-report-{batch.pk}", version)


class _NotKept(Exception):
    """Raised in place of computing: :func:`kept_report` only reads."""


def kept_report(batch: Batch, version: str) -> dict[str, Any] | None:
    """The calibration report with its figures (``report``, ``reliability_svg``, ``proportions_svg``)
    computed at ``version`` and kept in the results cache by the report's job
    (:mod:`annotation.machine.services.background`), or None: a read, never the computation."""

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
    """The machine against the crowd on the blind sample; see the module docstring.

    ``progress``: called with each of :data:`REPORT_STEPS` as the step begins, and in the crowd's
    reliability with ``(step, refitted, bootstrap)`` as its bootstrap refits go.

    JSON-ready. Keys: ``labeller``, ``model``, ``prompt_version``, ``sample_batch``, ``n``,
    ``pending``, ``accuracy``, ``kappa``, ``kappa_ci``, ``per_category`` (label -> precision,
    recall, support), ``confusion`` (rows: crowd, columns: machine, in :data:`LABELS` order),
    ``ece``, ``brier``, ``reliability``, ``alt_test``, ``proportions``, ``against_truth`` (the
    crowd's measured reliability: the machine's de-noised accuracy against the true label,
    the ceiling and the crowd's self-agreement; :mod:`genderbias.crowd.reliability`).
    """
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
    report["echo"] = sample.echo.as_dict() if sample.echo is not None else None
    return report


def routing_ceiling_of(batch: Batch, sample: CalibrationSample, figures: dict[str, Any]) -> dict[str, Any]:
    """The ceiling as routing counts it (:func:`genderbias.crowd.simulation.escalation.routing_ceiling`): the best
    agreement with the sample's reference label any machine can expect, a query without a decisive label
    an error, under the crowd model fitted to the sample (``figures``: ``against_truth``), with the sample's
    rule and, beside it, with the first votes alone. None without a fitted model."""
    from dataclasses import replace

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
    """The machine's labels of *every* sampled query, answered or not, disputed or not (training
    queries left out): the figures against the truth and the alt-test use the votes of them all."""
    stratum_of = _stratum_of(sample)
    machine = machine_labels(batch, sample.identity)
    return {q: machine[q] for q in stratum_of if q in machine and not machine[q].in_training}


def _stratum_of(sample: CalibrationSample) -> dict[str, str]:
    """Every sampled qid of every link of the sample (first draw and extensions) -> its stratum."""
    stratum_of: dict[str, str] = {}
    for link in sample.chain or [sample.sample_batch]:
        stratum_of |= link.derivation["stratum_of"]
    return stratum_of


def _alt_test(batch: Batch, sample: CalibrationSample) -> dict[str, Any]:
    """The alt-test on every sampled query with two or more votes, as its authors define it.

    Not only the queries with a crowd label: a query the crowd split on (no strict majority)
    is kept, since the test compares annotators with each other, not with the majority. The
    annotators' rates are taken over the whole sample, for the sample size it would need.
    """
    from genderbias.machine.alternative_annotator import alt_test

    machine = {q: m.label for q, m in _sample_machine(batch, sample).items()}
    humans: dict[str, dict[str, str]] = {}
    for item, worker, label in sample.votes.itertuples(index=False):
        if item in machine:
            humans.setdefault(str(worker), {})[str(item)] = label
    size = len(_stratum_of(sample))
    return alt_test(humans, machine, sample_size=size).as_dict()


def _gold_votes(chain: list[Batch]) -> tuple[Any, dict[str, str]]:
    """The gold questions' usable votes on the sample and their known labels: what seeds
    Dawid–Skene against the truth.

    A worker meets the same gold question in every HIT, and Dawid–Skene takes one vote per
    worker and item, so each answer is an item of its own, ``gold:<qid>:<assignment>``,
    with the known label (apart from the real queries' qids).

    The same assignments as the real votes (``counts_answers``: submitted or approved, not failed on
    gold unless the batch keeps such answers), so
    each worker's gold answers describe the work that counts; being the ones that passed
    the gold check, they lean a little optimistic.
    """
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
    """The crowd model fitted to the sample's votes (the report's ``against_truth`` without its
    bootstrap): what routing's ceiling and ``route_audit --crowd fitted`` simulate. StateError
    when the sample has no votes yet."""
    if sample.votes is None or not len(sample.votes):
        raise StateError(f"the calibration sample {sample.sample_batch.name!r} has no votes yet")
    return _against_truth(batch, sample, bootstrap=0)


def _against_truth(
    batch: Batch, sample: CalibrationSample, *, bootstrap: int, progress: Callable[[int, int], None] | None = None
) -> dict[str, Any]:
    """What the crowd's measured reliability says (:func:`genderbias.crowd.reliability.crowd_reliability`).

    Every sampled query with a vote and a machine label counts, disputed ones too, each
    weighted N_s / n_s over the stratum's queries with a vote; k is the batch's votes per
    query (what routed queries get).
    """
    import pandas as pd

    from genderbias.crowd.reliability import crowd_reliability
    from genderbias.crowd.shared_errors import shared_errors

    stratum_of = _stratum_of(sample)
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


# --- machine pre-labelling ---


def prelabel_runs(batch: Batch) -> list[dict[str, Any]]:
    """Each stored run of ``batch`` (one per labeller, model and prompt version), the latest first:
    counts per label, labelled queries, mean confidence, the trained labeller's cross-validated
    accuracy (from ``PreLabel.detail``) and when it was stored."""
    rows = (
        PreLabel.objects.filter(batch_query__batch=batch)
        .values("labeller", "model", "prompt_version", "label")
        .annotate(count=Count("id"), mean=Avg("confidence"), latest=Max("created"))
        .order_by()
    )
    runs: dict[tuple[str, str, str], dict[str, Any]] = {}
    for row in rows:
        key = (row["labeller"], row["model"], row["prompt_version"])
        run = runs.setdefault(
            key,
            {
                "labeller": key[0],
                "model": key[1],
                "prompt_version": key[2],
                "counts": dict.fromkeys(LABELS, 0),
                "labelled": 0,
                "mean_confidence": 0.0,
                "cv_accuracy": None,
                "created": row["latest"],
            },
        )
        run["counts"][row["label"]] = row["count"]
        run["labelled"] += row["count"]
        run["mean_confidence"] += row["mean"] * row["count"]
        run["created"] = max(run["created"], row["latest"])
    for (labeller, model, prompt_version), run in runs.items():
        run["mean_confidence"] = run["mean_confidence"] / run["labelled"] if run["labelled"] else None
        cv = (
            PreLabel.objects.filter(
                batch_query__batch=batch, labeller=labeller, model=model, prompt_version=prompt_version
            )
            .filter(detail__cv_accuracy__isnull=False)
            .values_list("detail__cv_accuracy", flat=True)
            .first()
        )
        run["cv_accuracy"] = cv
    return sorted(runs.values(), key=lambda run: run["created"], reverse=True)


# --- label sensitivity (metrics): the non-gendered sets by label source ---


def non_gendered_by_source(batch: Batch) -> dict[str, list[str]]:
    """For a batch with machine labels: its non-gendered qids by where the labels come from.

    ``crowd only`` (the crowd's labels, rulings first), ``machine only`` (the machine routing
    used, else the latest, for every query), ``hybrid`` (the crowd where it labelled, else an
    accepted machine label: :func:`annotation.results.selectors.labels_with_sources`). Empty for
    a batch no machine labelled. Keys as :data:`genderbias.ranking.defaults.LABEL_SOURCES`.
    """
    found = identities(batch)
    if not found:
        return {}
    routing = latest_routing(batch)
    identity = Identity(routing.labeller, routing.model, routing.prompt_version) if routing else found[0]
    machine = machine_labels(batch, identity)

    def non_gendered(labels) -> list[str]:
        return sorted(qid for qid, source in labels.items() if source.label == "n")

    crowd = crowd_labels(batch)
    return {
        "crowd only": non_gendered(crowd),
        "machine only": sorted(qid for qid, m in machine.items() if m.label == "n"),
        "hybrid": non_gendered(machine_accepted(batch) | crowd),  # as labels_with_sources: the crowd first
    }


@dataclass(frozen=True)
class LabelProbabilities:
    """Every labelled query's probability of each label (:mod:`genderbias.crowd.label_probabilities`)."""

    table: Any  #: pandas frame, qid × :data:`LABELS`, rows summing to 1
    source: dict[str, str]  #: qid -> the source of its final label (:data:`annotation.results.selectors.SOURCES`)
    label: dict[str, str]  #: qid -> its final label (what the export writes)
    calibrated: bool  #: machine-accepted labels were calibrated on a blind sample (else: the machine's confidence)
    texts: dict[str, str]  #: qid -> query text, every query of the batch (gold left out), batch order
    version: str  #: the batch's answers version when read (:func:`annotation.results.selectors.answers_version`)
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
    """The probabilities behind a report on ``batch``'s labels: Dawid–Skene's gold-seeded posterior
    for the crowd's queries, certainty for rulings, the calibration sample's band distribution for
    accepted machine labels; the final labels as :func:`labels_with_sources` gives them.

    Where a batch routed by a machine has no readable calibration sample (cancelled, too few
    answers), an accepted label gets the machine's own confidence, the rest spread evenly
    (``calibrated`` False, said on the report).
    """
    import pandas as pd

    from annotation.results.selectors import gold_discarded_assignments, gold_judgments, gold_labels
    from genderbias.crowd import label_probabilities as lp

    answers = BatchAnswers(batch)
    final = labels_with_sources(batch, answers)
    frame, gold, discarded = answers.frame, {}, 0
    if not frame.empty:
        gold = gold_labels(batch)
        frame = frame if not gold else pd.concat([frame, gold_judgments(batch)], ignore_index=True)
        discarded = gold_discarded_assignments(batch)
    parts = []
    rulings = sorted(q for q, s in final.items() if s.source == ADJUDICATED)
    parts.append(pd.DataFrame(lp.one_hot(LABELS, [final[q].label for q in rulings]), index=rulings, columns=LABELS))
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
