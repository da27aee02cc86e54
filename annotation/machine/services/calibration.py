"""Blind calibration of a machine's labels: a sample of the batch goes to the crowd, unseen.

A batch labelled by a machine first (:mod:`.prelabels`) stays a draft; its crowd work goes
through *derived* batches (``Batch.parent``): first a calibration sample, then the routed
queries (:mod:`.routing`). :func:`create_calibration_sample` draws a simple random sample
of the machine-labelled queries in draw order (:func:`annotation.machine.calibration_statistics.random_sample`,
what routing's guarantee rests on) and makes it a batch of its own with the parent's
settings, gold and training queries, on the parent's provider; a batch has one sample, which
``extend`` continues with the next queries of the same random permutation (the first draw's
seed; a batch of its own whose ``derivation["extends"]`` names the one before:
:func:`sample_chain`). Every figure of the report is computed over the whole chain. The annotators see a
HIT like any other: the machine's label and its confidence are nowhere on the HIT page, and
the sample is in random order when it is grouped into HITs.

:func:`calibration_report` compares the machine with the crowd's labels of the sample
("a researcher's ruling first, else the majority"): accuracy, Cohen's kappa, precision
and recall per category, confusion matrix, calibration (ECE, Brier, reliability bins),
the Alternative Annotator Test on the individual votes, and each category's share of the
whole batch by prediction-powered inference. Each sampled query is weighted by the inverse
of its machine label's sampling rate (N_s / n_s, post-stratified), so the figures estimate
the batch, not the sample. Queries the machine was trained on (``detail["in_training"]``) are left out.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Count, Max

from annotation.crowd.services.batch_settings import NOT_STORED, OFFERED, BatchSettings, GoldQuery
from annotation.crowd.services.batches import create_batch
from annotation.labels import LABEL_NAMES, LABELS
from annotation.machine.services.label_sources import latest_routing
from annotation.models import Adjudication, Assignment, Batch, BatchQuery, Judgment, PreLabel
from core.errors import ServiceError, StateError
from core.services.names import validate_name

#: The sample size when none is given: enough for kappa within about +-0.1.
DEFAULT_SAMPLE = 200


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


def settings_of(batch: Batch) -> BatchSettings:
    """The settings ``batch`` was created with, for a batch derived from it.

    Prolific's completion code is left out: every study gets its own random one.
    """
    values = {field: getattr(batch, field) for field in OFFERED if field not in NOT_STORED}
    values["provider_options"] = {k: v for k, v in batch.provider_options.items() if k != "completion_code"}
    return BatchSettings(**values)


def create_derived_batch(
    parent: Batch, name: str, qids: list[str], *, purpose: str, derivation: dict[str, Any], seed: int
) -> Batch:
    """A batch of ``qids`` of ``parent`` with its settings, gold, training queries and team."""
    gold = [
        GoldQuery(q.qid, q.text, q.gold_label)
        for q in BatchQuery.objects.filter(batch=parent, is_gold=True).order_by("position")
    ]
    training = [GoldQuery(t.qid, t.text, t.label) for t in parent.training_queries.order_by("position")]
    settings = settings_of(parent)
    settings.seed = seed
    with transaction.atomic():
        child = create_batch(
            name, settings, query_set=parent.query_set, pool=parent.pool, gold=gold, training=training, only_qids=qids
        )
        child.parent = parent
        child.purpose = purpose
        child.derivation = derivation
        child.save(update_fields=["parent", "purpose", "derivation"])
        child.team.set(parent.team.all())
    return child


def part_name(parent: Batch) -> str:
    """The next free ``<parent>-part-<n>``: a derived batch's default name.

    Neutral on purpose: annotators see the batch's name on their HIT page, and one called
    "calibration" would tell them their answers are checking a machine.
    """
    number = parent.derived.count() + 1
    while Batch.objects.filter(name=f"{parent.name}-part-{number}").exists():
        number += 1
    return f"{parent.name}-part-{number}"


def _check_parent(batch: Batch) -> None:
    if batch.parent_id is not None:
        raise StateError(f"batch {batch.name!r} is itself derived from {batch.parent.name!r}; use that one")
    if batch.status != Batch.Status.DRAFT:
        raise StateError(
            f"batch {batch.name!r} is {batch.status}: machine labels with a calibration sample are for a batch "
            "that has not gone to the crowd (its crowd work goes through derived batches)"
        )


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


def _locked_parent(batch: Batch) -> Batch:
    locked = Batch.objects.select_for_update().get(pk=batch.pk)
    _check_parent(locked)
    return locked


def create_calibration_sample(
    batch: Batch,
    sample: int = DEFAULT_SAMPLE,
    *,
    labeller: str | None = None,
    seed: int = 0,
    name: str = "",
    extend: bool = False,
) -> Batch:
    """Draw a blind simple random sample of ``batch``'s machine-labelled queries and make it a batch.

    ``extend``: take the next ``sample`` queries of the first draw's permutation (its seed, not
    ``seed``) and make them a batch that continues the sample in force
    (``derivation["extends"]``); the union in draw order is still one simple random sample, so
    routing's guarantee stays valid (:mod:`annotation.machine.routing_statistics`). Refused when the
    machine-labelled queries are no longer the population the first draw was drawn from.
    Race-free: the parent's row is locked while the sample in force is checked, the qids drawn
    and the name chosen, so two requests at once make one sample, and the second is refused
    (a sample exists) instead of paying the crowd twice. Nothing is sent to the provider:
    publish it like any batch (the command and the page do).
    """
    from annotation.machine.calibration_statistics import random_sample

    if sample < 1:
        raise ServiceError(f"the calibration sample needs at least one query, got {sample}")
    if seed < 0:
        raise ServiceError(f"the seed must be a non-negative integer, got {seed}")
    if name:
        validate_name(name, "batch")
    with transaction.atomic():
        parent = _locked_parent(batch)
        current = calibration_batch(parent)
        if current is not None and not extend:
            raise StateError(
                f"batch {parent.name!r} has a calibration sample already ({current.name}); extend it "
                "(calibrate --extend, or extend=true) or cancel it first"
            )
        if current is None and extend:
            raise StateError(f"batch {parent.name!r} has no calibration sample to extend; draw one first")
        if extend and _routed_in_force(parent):
            raise StateError(
                f"batch {parent.name!r} was routed on its sample: cancel the routed batch before extending the sample"
            )
        chain = sample_chain(current) if current is not None else []
        if chain:
            first = chain[0].derivation
            identity = Identity(first["labeller"], first["model"], first["prompt_version"])
            if labeller not in (None, "", identity.labeller):
                raise ServiceError(f"the sample in force was drawn by {identity}; extend it with the same labeller")
        else:
            identity = identity_for(parent, labeller)
        machine = {qid: m.label for qid, m in machine_labels(parent, identity).items() if not m.in_training}
        if not machine:
            raise StateError(f"no query of batch {parent.name!r} has a machine label from {identity}")
        taken = drawn_order(chain)
        # One permutation for the whole sample: an extension continues the first draw's (its seed).
        draw_seed = int(chain[0].derivation.get("seed", seed)) if chain else seed
        _check_population(chain, machine)
        try:
            qids = random_sample(machine, sample, seed=draw_seed, exclude=taken)
        except ValueError:
            raise StateError(
                f"every machine-labelled query of batch {parent.name!r} is in its sample already"
            ) from None
        population = Counter(machine.values())
        drawn = Counter(machine[q] for q in qids)
        derivation = identity.as_dict() | {
            "design": RANDOM_DESIGN,
            "draw": PERMUTATION_DRAW,
            "seed": draw_seed,
            "seed_given": seed,
            "population_size": len(machine),
            "population_key": population_key(machine),
            "requested": sample,
            "planned": chain[0].derivation.get("planned", chain[0].derivation["requested"]) if chain else sample,
            "extends": chain[-1].pk if chain else None,
            "look": len(chain) + 1,
            "order": qids,
            "strata": [
                {"label": label, "population": population[label], "sampled": drawn[label]}
                for label in LABELS
                if population[label]
            ],
            "stratum_of": {qid: machine[qid] for qid in qids},
        }
        name = name or part_name(parent)
        if Batch.objects.filter(name=name).exists():
            raise ServiceError(f"a batch named {name!r} exists already")
        try:
            with transaction.atomic():
                return create_derived_batch(
                    parent, name, qids, purpose=Batch.Purpose.CALIBRATION, derivation=derivation, seed=seed
                )
        except IntegrityError as exc:  # a name taken by a request outside this lock (e.g. a plain batch)
            raise StateError(f"batch {name!r} could not be created ({exc}); try again") from None


#: ``derivation["design"]`` of a sample drawn by :func:`annotation.machine.calibration_statistics.random_sample`.
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


def _check_population(chain: list[Batch], machine: dict[str, str]) -> None:
    """An extension draws from the population of the first draw, or the union is no random sample."""
    if chain and not same_population(chain[0].derivation, machine):
        raise StateError(
            f"the machine-labelled queries of the batch are not those the sample {chain[0].name!r} was drawn "
            "from (labels were added or removed since): an extension would not continue one random sample; "
            "cancel the sample and draw a new one"
        )


def _routed_in_force(batch: Batch) -> bool:
    return (
        batch.routings.filter(routed_batch__isnull=False).exclude(routed_batch__status=Batch.Status.CANCELLED).exists()
    )


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


def read_sample(batch: Batch, labeller: str | None = None, *, sample_batch: Batch | None = None) -> CalibrationSample:
    """The calibration sample of ``batch`` with the crowd's labels and ``labeller``'s (default: the
    machine the sample was drawn by); ``sample_batch``: the sample as it was when a routing recorded
    it (its link), not the one in force."""
    from annotation.machine.calibration_statistics import Stratum, stratum_weights
    from annotation.results.services.answers_summary import BatchAnswers

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
    crowd: dict[str, str] = {}
    frames = []
    settled: set[str] = set()  # enough votes for a majority (labelled or a final split)
    for link in chain:
        answers = BatchAnswers(link)
        crowd |= answers.labels
        frames.append(answers.frame)
        votes_of = answers.votes
        if len(votes_of):
            settled |= {str(q) for q in votes_of.index[~votes_of["too_few_votes"]]}
    votes = frames[0] if len(frames) == 1 else _concat(frames)
    population = {q: m for q, m in machine.items() if not m.in_training}
    drawn = [q for q in order if q in population]
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
    work = Assignment.objects.filter(hit__batch__in=chain).aggregate(
        n=Count("id"), submitted=Max("submitted_at"), reviewed=Max("reviewed_at")
    )
    rulings = Adjudication.objects.filter(batch_query__batch__in=chain).aggregate(n=Count("id"), last=Max("decided_at"))
    labelled = PreLabel.objects.filter(batch_query__batch=batch).aggregate(n=Count("id"), last=Max("created"))
    routing = latest_routing(batch)
    state = "|".join(
        str(v)
        for v in (
            ",".join(map(str, chain)),
            *work.values(),
            *rulings.values(),
            *labelled.values(),
            routing.pk if routing else None,
        )
    )
    return hashlib.sha256(state.encode()).hexdigest()[:32]


#: Fewer crowd-labelled sample queries than this and no figure is computed.
MIN_CALIBRATED = 10


def calibration_report(batch: Batch, labeller: str | None = None, *, bootstrap: int = 2000) -> dict[str, Any]:
    """The machine against the crowd on the blind sample; see the module docstring.

    JSON-ready. Keys: ``labeller``, ``model``, ``prompt_version``, ``sample_batch``, ``n``,
    ``pending``, ``accuracy``, ``kappa``, ``kappa_ci``, ``per_category`` (label -> precision,
    recall, support), ``confusion`` (rows: crowd, columns: machine, in :data:`LABELS` order),
    ``ece``, ``brier``, ``reliability``, ``alt_test``, ``proportions``, ``against_truth`` (the
    crowd's measured reliability: the machine's de-noised accuracy against the true label,
    the ceiling and the crowd's self-agreement; :mod:`annotation.machine.crowd_reliability`).
    """
    from annotation.machine.calibration_statistics import calibration_figures
    from annotation.machine.proportions import category_proportions

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
    figures = calibration_figures(
        sample.machine, sample.confidence, sample.human, weights=sample.weights, bootstrap=bootstrap
    )
    report |= figures.as_dict()
    report["n"] = len(sample.qids)
    report["alt_test"] = _alt_test(batch, sample)
    report["against_truth"] = _against_truth(batch, sample, bootstrap=bootstrap)
    rest_labels = [m.label for m in sample.rest.values()]
    report["proportions"] = category_proportions(sample.human, sample.machine, rest_labels, weights=sample.weights)
    return report


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
    from annotation.machine.alternative_annotator import alt_test

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

    The same assignments as the real votes (submitted or approved, not failed on gold), so
    each worker's gold answers describe the work that counts; being the ones that passed
    the gold check, they lean a little optimistic.
    """
    import pandas as pd

    rows = (
        Judgment.objects.filter(
            batch_query__batch__in=chain,
            batch_query__is_gold=True,
            label__isnull=False,
            assignment__status__in=[Assignment.Status.SUBMITTED, Assignment.Status.APPROVED],
        )
        .exclude(assignment__gold_passed=False)
        .values_list(
            "batch_query__qid", "assignment_id", "assignment__worker__pseudonym", "label", "batch_query__gold_label"
        )
    )
    rows = [(f"gold:{qid}:{assignment}", worker, label, known) for qid, assignment, worker, label, known in rows]
    frame = pd.DataFrame([row[:3] for row in rows], columns=["item", "worker", "label"])
    return frame, {item: known for item, _, _, known in rows if known}


def _against_truth(batch: Batch, sample: CalibrationSample, *, bootstrap: int) -> dict[str, Any]:
    """What the crowd's measured reliability says (:func:`annotation.machine.crowd_reliability.crowd_reliability`).

    Every sampled query with a vote and a machine label counts, disputed ones too, each
    weighted N_s / n_s over the stratum's queries with a vote; k is the batch's votes per
    query (what routed queries get).
    """
    import pandas as pd

    from annotation.machine.crowd_reliability import crowd_reliability

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
    )
    return figures.as_dict()
