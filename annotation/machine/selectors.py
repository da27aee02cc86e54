"""Reads of machine labelling: the machines' runs on a batch, the blind calibration sample read against
a machine (:func:`read_sample`), the non-gendered sets by label source.

A machine-labelled batch stays a draft; its crowd work goes through derived batches (``Batch.parent``):
a calibration sample (a chain when extended: :func:`sample_chain`), then the routed queries. Sampled
queries are weighted N_s / n_s (post-stratified on the machine's label), so the figures estimate the batch.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from django.db.models import Avg, Count, Max

from annotation.models import Batch, EchoRestore, PreLabel
from annotation.results.selectors.labels import BatchAnswers, crowd_labels, latest_routing, machine_accepted
from core.errors import StateError
from genderbias.labels import LABELS
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
    """``qid -> label`` of the batch's gold questions as ``identity`` labelled them: where the machine's
    errors meet the crowd's on a known label (:func:`genderbias.crowd.shared_errors.shared_errors`)."""
    rows = PreLabel.objects.filter(batch_query__batch=batch, batch_query__is_gold=True, **identity.as_dict())
    return dict(rows.values_list("batch_query__qid", "label"))


def calibration_batch(batch: Batch) -> Batch | None:
    """The blind calibration sample of ``batch`` in force (the last link of an extended one), or None."""
    return (
        batch.derived.filter(purpose=Batch.Purpose.CALIBRATION)
        .exclude(status=Batch.Status.CANCELLED)
        .order_by("-created", "-pk")
        .first()
    )


def sample_chain(sample_batch: Batch) -> list[Batch]:
    """The calibration batches of ``sample_batch``'s sample: the first draw, then each extension up to it."""
    chain = [sample_batch]
    while (previous := chain[-1].derivation.get("extends")) is not None:
        link = Batch.objects.filter(pk=previous).first()
        if link is None or link in chain:
            break
        chain.append(link)
    return chain[::-1]


def drawn_order(chain: list[Batch]) -> list[str]:
    """Every sampled qid of the chain in draw order (of an old sample: the shuffled order recorded)."""
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
    """Whether ``population`` (qids) is the one the first draw was drawn from: by its fingerprint when
    recorded, else by its size."""
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
    stratum_of: dict[str, str] = field(default_factory=dict)  #: every sampled qid of every link -> its stratum


@dataclass(frozen=True)
class SampleEcho:
    """The echo check of a calibration sample (:mod:`genderbias.machine.echo`)."""

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
    """A sample link's answers without the held-out workers': its own version, so no cached figure of
    the whole answers is taken for these."""

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
    with the researchers' restorations."""
    workers = echo_check(votes[["item", "worker", "label"]].itertuples(index=False, name=None), machine)
    restored = set(EchoRestore.objects.filter(batch=batch).values_list("worker__pseudonym", flat=True))
    held = sorted(w.worker for w in workers if w.flagged and w.worker not in restored)
    return SampleEcho(
        workers=workers,
        held_out=held,
        restored=sorted(w.worker for w in workers if w.flagged and w.worker in restored),
        held_out_answers=int(votes["worker"].isin(held).sum()) if len(votes) else 0,
    )


def reference_rule(recorded: dict[str, Any] | None, votes: int = 0) -> Any:
    """The :class:`~genderbias.crowd.simulation.escalation.ReferenceRule` of a recorded one (a sample's
    ``derivation["reference"]``); of an old sample without one: ``votes`` votes, no escalation, a strict majority."""
    from genderbias.crowd.simulation.escalation import ReferenceRule

    if not recorded:
        return ReferenceRule(votes=votes, cap=votes)
    return ReferenceRule(votes=recorded["votes"], cap=recorded["cap"], posterior=recorded.get("posterior"))


def rule_record(rule: Any) -> dict[str, Any]:
    """A reference rule as a routing and the API record it, with the sentence that states it."""
    return {key: getattr(rule, key) for key in ("votes", "cap", "until", "posterior")} | {"text": rule.describe()}


def decisive_labels(answers: BatchAnswers, posterior: float | None) -> dict[str, str]:
    """``qid -> label`` of the queries whose crowd label is decisive: a ruling, or a strict majority
    (with ``posterior``: whose Dawid–Skene posterior is at least that too, as escalation reads it)."""
    labels = answers.labels
    if posterior is None:
        return labels
    rulings = answers.rulings
    fit = answers.dawid_skene
    best = fit.posteriors.max(axis=1) if fit is not None else {}
    return {q: label for q, label in labels.items() if q in rulings or float(best.get(q, 0.0)) >= posterior - 1e-12}


def read_sample(batch: Batch, labeller: str | None = None, *, sample_batch: Batch | None = None) -> CalibrationSample:
    """The calibration sample of ``batch`` with the crowd's labels and ``labeller``'s (default: the
    sample's machine); ``sample_batch``: the link a routing recorded, not the one in force."""
    import pandas as pd

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
    stratum_of = {q: stratum for link in chain for q, stratum in link.derivation["stratum_of"].items()}
    order = drawn_order(chain)
    machine = machine_labels(batch, identity)
    rule = reference_rule(first.get("reference"), batch.assignments_per_query)
    links = [BatchAnswers(link) for link in chain]
    frames = [answers.frame for answers in links]
    settled: set[str] = set()  # enough votes for a majority (labelled or a final split)
    for answers in links:
        votes_of = answers.votes
        if len(votes_of):
            settled |= {str(q) for q in votes_of.index[~votes_of["too_few_votes"]]}
    votes = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
    population = {q: m for q, m in machine.items() if not m.in_training}
    drawn = [q for q in order if q in population]
    # The echo check: workers who follow this machine more than people do are held out of the reference.
    echo = sample_echo(batch, votes, {q: population[q].label for q in drawn})
    held = frozenset(echo.held_out)
    crowd: dict[str, str] = {}
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
        stratum_of=stratum_of,
    )


def prelabel_runs(batch: Batch) -> list[dict[str, Any]]:
    """Each stored run of ``batch`` (one per labeller, model and prompt version), the latest first."""
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
    for key, run in runs.items():
        run["mean_confidence"] = run["mean_confidence"] / run["labelled"] if run["labelled"] else None
        trained = PreLabel.objects.filter(
            batch_query__batch=batch, detail__cv_accuracy__isnull=False, **Identity(*key).as_dict()
        )
        run["cv_accuracy"] = trained.values_list("detail__cv_accuracy", flat=True).first()
    return sorted(runs.values(), key=lambda run: run["created"], reverse=True)


def non_gendered_by_source(batch: Batch) -> dict[str, list[str]]:
    """A machine-labelled batch's non-gendered qids by label source (keys as
    :data:`genderbias.ranking.defaults.LABEL_SOURCES`): ``crowd only``, ``machine only`` (the machine
    routing used, else the latest) and ``hybrid`` (as ``labels_with_sources``); empty without one."""
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
