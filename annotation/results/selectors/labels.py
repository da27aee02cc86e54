"""What a batch's answers add up to: judgments, labels and where each comes from, per query.

Only usable judgments count: a label to a real query in work whose answers count
(:func:`annotation.crowd.selectors.counts_answers`), workers by pseudonym. Labels come from majority
vote as in Rekabsaz & Schedl (SIGIR 2020): a strict plurality of at least ``MIN_VOTES`` votes; ties
and too few votes are set aside. A researcher's ruling overrides the crowd; an accepted machine label
stands where the crowd gave none (here, so every sub-domain may read it). Read-only but for the
``results`` cache (:func:`answers_cached`).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

from django.db.models import Count, Max
from django.forms.models import model_to_dict

from annotation.crowd.selectors import (
    WORK_KEYS,
    answer_counts,
    counts_answers,
    crowd_batch_ids,
)
from annotation.models import Adjudication, Batch, Judgment, PreLabel, Routing
from annotation.results.selectors.cache import remembered
from genderbias.labels import LABEL_NAMES, LABELS

if TYPE_CHECKING:
    import pandas as pd


T = TypeVar("T")


#: A single vote is one opinion, not agreement; a label needs at least this many votes.
MIN_VOTES = 2


CITATION = (
    "Navid Rekabsaz and Markus Schedl. 2020. Do Neural Ranking Models Intensify Gender Bias? "
    "In Proceedings of SIGIR 2020, 2065-2068. https://doi.org/10.1145/3397271.3401280"
)


@dataclass(frozen=True)
class LabelSource:
    """One query's label and where it came from (``source`` is one of :data:`SOURCES`)."""

    label: str
    source: str
    confidence: float | None = None  #: the machine's, for a machine-accepted label


CROWD = "crowd majority"
ADJUDICATED = "adjudicated"
MACHINE = "machine-accepted"
#: Every source, in the order pages and cards list them.
SOURCES = (CROWD, ADJUDICATED, MACHINE)


def latest_routing(batch: Batch) -> Routing | None:
    """The decision in force for ``batch``: its latest routing whose routed batch was not cancelled."""
    return batch.routings.exclude(routed_batch__status=Batch.Status.CANCELLED).select_related("routed_batch").first()


def routing_stages(routing: Routing) -> list[dict[str, Any]]:
    """The routing's stages (a cascade's ``Routing.stages``), a single labeller's as one stage."""
    return routing.stages or [model_to_dict(routing, fields=("labeller", "model", "prompt_version", "accepted"))]


def machine_accepted(batch: Batch) -> dict[str, LabelSource]:
    """The machine labels routing accepted for ``batch``, each stage's with its own labeller's label."""
    routing = latest_routing(batch)
    if routing is None or not routing.accepted:
        return {}
    found: dict[str, LabelSource] = {}
    for stage in routing_stages(routing):
        rows = PreLabel.objects.filter(
            batch_query__batch=batch,
            batch_query__qid__in=stage["accepted"],
            labeller=stage["labeller"],
            model=stage["model"],
            prompt_version=stage["prompt_version"],
        ).values_list("batch_query__qid", "label", "confidence")
        found |= {qid: LabelSource(label, MACHINE, confidence) for qid, label, confidence in rows}
    return found


def usable_judgments(batch: Batch):
    return Judgment.objects.filter(
        counts_answers("assignment__"),
        batch_query__batch__in=crowd_batch_ids(batch),
        batch_query__is_gold=False,
        label__isnull=False,
    )


def judgments_frame(batch: Batch) -> pd.DataFrame:
    """One row per usable judgment (:func:`votes_frame`)."""
    return votes_frame(usable_judgments(batch))


def votes_frame(judgments) -> pd.DataFrame:
    """``judgments`` as the aggregators read them: ``item`` (qid), ``worker`` (pseudonym), ``label``, in
    the order answered, so that every aggregator counts a worker's latest answer to a query."""
    import pandas as pd

    fields = ("batch_query__qid", "assignment__worker__pseudonym", "label")
    rows = judgments.order_by("assignment_id", "pk").values_list(*fields)
    return pd.DataFrame(list(rows), columns=["item", "worker", "label"], dtype=object)


#: A vote's hand signals when none were recorded (another provider's page): unknown, not zero.
NO_SIGNALS = {"pastes": None, "tab_leaves": None, "item_ms": None}


def machine_opinions(batch: Batch) -> dict[str, dict[str, Any]]:
    """``qid -> {label, confidence, labeller, model}``: the machine's label of every query, accepted or
    not, from the latest routing's labeller, else the calibration sample's: to audit it item by item."""
    routing = latest_routing(batch)
    if routing is not None:
        identity = (routing.labeller, routing.model, routing.prompt_version)
    else:
        sample = (
            Batch.objects.filter(parent=batch, purpose=Batch.Purpose.CALIBRATION)
            .order_by("created", "pk")
            .values_list("derivation", flat=True)
            .first()
        )
        if not sample or "labeller" not in sample:
            return {}
        identity = (sample["labeller"], sample["model"], sample["prompt_version"])
    rows = PreLabel.objects.filter(
        batch_query__batch=batch, labeller=identity[0], model=identity[1], prompt_version=identity[2]
    ).values_list("batch_query__qid", "label", "confidence")
    return {
        qid: {"label": label, "confidence": confidence, "labeller": identity[0], "model": identity[1]}
        for qid, label, confidence in rows
    }


def min_votes(batch: Batch) -> int:
    """The fewest votes a query of ``batch`` needs for a majority label, as the export counts them."""
    return min(MIN_VOTES, batch.assignments_per_query)


def answers_version(
    batch: Batch,
    *,
    own_judgments: dict[str, int | None] | None = None,
    own_assignments: dict[str, Any] | None = None,
) -> str:
    """A key that changes whenever what ``batch``'s answers add up to may change (aggregates of the batch,
    its crowd batches' work, rulings and routing); ``own_judgments`` and ``own_assignments``: the
    batch's own counts when the caller read them already."""
    ids = crowd_batch_ids(batch)
    alone = ids == [batch.pk]
    own = alone and own_assignments is not None and own_judgments is not None
    counts = None if own else answer_counts(ids)
    counted = own_assignments if own else counts["assignments"]
    work = {key: counted[key] for key in WORK_KEYS}
    judged = own_judgments if own else counts["judged"]
    rulings = _rulings_of(ids).aggregate(n=Count("id"), last=Max("id"), decided=Max("decided_at"))
    routing = latest_routing(batch)
    machine = (
        # ``created``: a labeller run again rewrites its rows in place (same ids)
        PreLabel.objects.filter(batch_query__batch=batch).aggregate(
            n=Count("id"), last=Max("id"), created=Max("created")
        )
        if routing is not None
        else {}
    )
    state = (
        batch.pk,
        batch.created.isoformat() if batch.created else None,
        batch.assignments_per_query,
        ids,
        sorted(work.items()),
        sorted(judged.items()),
        sorted(rulings.items()),
        routing.pk if routing else None,
        sorted(machine.items()),
    )
    return hashlib.sha256(repr(state).encode()).hexdigest()[:32]


def _rulings_of(batch_ids: list[int]):
    """The rulings on the queries of the batches ``batch_ids``, for counting them: each one's batch
    read through its query's key, so counting reads the few rulings, not every query of the batch."""
    from django.db.models import OuterRef, Subquery

    from annotation.models import BatchQuery

    batch_of = Subquery(BatchQuery.objects.filter(pk=OuterRef("batch_query_id")).order_by().values("batch_id")[:1])
    return Adjudication.objects.alias(of_batch=batch_of).filter(of_batch__in=batch_ids).order_by()


def answers_cached(answers: BatchAnswers, kind: str, compute: Callable[[], T]) -> T:
    """``compute()`` once per :func:`answers_version` of ``answers.batch``, shared by every worker
    (the ``results`` cache) and kept on ``answers`` for the request."""
    if kind in answers.memo:
        return answers.memo[kind]
    value = remembered(
        f"batch-{answers.batch.pk}:{answers.version}:{kind}",
        compute,
        generation=(f"batch-{answers.batch.pk}", answers.version),
    )
    answers.memo[kind] = value
    return value


def cached_for_answers(answers: BatchAnswers, kind: str, compute: Callable[[], T]) -> T:
    """:func:`answers_cached` for a page's rendered figures; ``kind`` names what is kept and everything
    besides the answers it depends on."""
    return answers_cached(answers, f"page:{kind}", compute)


@dataclass(eq=False)
class BatchAnswers:
    """A batch's usable judgments read once, and what is computed from them, each at most once per request."""

    batch: Batch
    _: KW_ONLY
    own_judgments: dict[str, int | None] | None = None
    own_assignments: dict[str, Any] | None = None
    memo: dict[str, Any] = field(default_factory=dict)

    @cached_property
    def frame(self) -> pd.DataFrame:
        """The usable judgments (read when first needed: a cached result needs none)."""
        return judgments_frame(self.batch)

    @cached_property
    def version(self) -> str:
        """The batch's :func:`answers_version` when these answers were first asked for it."""
        return answers_version(self.batch, own_judgments=self.own_judgments, own_assignments=self.own_assignments)

    @cached_property
    def votes(self) -> pd.DataFrame:
        """Majority vote per judged query; ``label`` is None (``disputed`` True) for ties and too few votes."""
        from genderbias.crowd.aggregation import majority_vote

        votes = majority_vote(self.frame)
        votes["too_few_votes"] = votes["votes"] < min_votes(self.batch)
        votes.loc[votes["too_few_votes"], "label"] = None
        votes["disputed"] = votes["disputed"] | votes["too_few_votes"]
        return votes

    @cached_property
    def dawid_skene(self):
        """Dawid-Skene's estimate (:class:`genderbias.crowd.aggregation.DawidSkeneResult`), None without judgments."""
        from genderbias.crowd.aggregation import dawid_skene

        return answers_cached(self, "dawid_skene", lambda: None if self.frame.empty else dawid_skene(self.frame))

    @cached_property
    def rulings(self) -> dict[str, str]:
        """``qid -> label`` of every query a researcher settled (:class:`Adjudication`)."""
        return dict(
            Adjudication.objects.filter(batch_query__batch__in=crowd_batch_ids(self.batch)).values_list(
                "batch_query__qid", "label"
            )
        )

    @cached_property
    def labels(self) -> dict[str, str]:
        """``qid -> label`` of every labelled query: "adjudication first, else majority vote", the one
        rule of every count; a settled query is never set aside."""
        votes = self.votes
        labelled = {str(q): label for q, label in votes["label"].items() if isinstance(label, str)}
        return labelled | self.rulings

    @cached_property
    def set_aside(self) -> list[str]:
        """Judged qids without a label: disputed or too few votes, and not settled by a researcher."""
        votes = self.votes
        return sorted(str(q) for q in votes.index[votes["disputed"]] if str(q) not in self.rulings)


def query_results(batch: Batch, answers: BatchAnswers | None = None) -> list[dict[str, Any]]:
    """Per query of the batch (gold excluded, batch order): ``label`` (``crowd_label``: the majority's),
    pseudonymous votes and Dawid-Skene's posteriors (``ds_posterior``: the largest)."""
    answers = answers or BatchAnswers(batch)
    # v2: with the machine's opinion, the agreement and the hand signals
    return answers_cached(answers, "query_results:v2", lambda: _query_results(batch, answers))


def _query_results(batch: Batch, answers: BatchAnswers) -> list[dict[str, Any]]:
    votes = answers.votes
    rulings = {
        a.batch_query.qid: a
        for a in Adjudication.objects.filter(batch_query__batch__in=crowd_batch_ids(batch)).select_related(
            "batch_query", "decided_by"
        )
    }
    frame = answers.frame
    ds_labels: dict[str, str] = {}
    ds_posterior: dict[str, float] = {}
    ds_posteriors: dict[str, dict[str, float]] = {}
    if (ds := answers.dawid_skene) is not None:
        ds_labels = ds.labels.dropna().to_dict()
        ds_posterior = ds.posteriors.max(axis=1).to_dict()
        posteriors = ds.posteriors.astype(float).round(6)
        posteriors.columns = [str(label) for label in posteriors.columns]
        ds_posteriors = posteriors.to_dict("index")  # one pass, not a Series per query
    # Per (qid, worker), the hand signals of the answer that counts (the latest, as in the frame).
    rows = (
        usable_judgments(batch)
        .order_by("assignment_id", "pk")
        .values_list("batch_query__qid", "assignment__worker__pseudonym", *NO_SIGNALS)
    )
    signals = {(qid, worker): dict(zip(NO_SIGNALS, values, strict=True)) for qid, worker, *values in rows}
    by_item: dict[str, list[dict[str, Any]]] = {}
    for item, worker, label in frame.itertuples(index=False):
        by_item.setdefault(item, []).append(
            {"worker": worker, "label": label, **signals.get((item, worker), NO_SIGNALS)}
        )
    invalid_judgments = Judgment.objects.filter(batch_query__batch__in=crowd_batch_ids(batch), label=None)
    invalid = Counter(invalid_judgments.values_list("batch_query__qid", flat=True))
    machine = machine_accepted(batch)
    opinions = machine_opinions(batch)
    by_qid = votes.to_dict("index")  # one pass over the votes, not a .loc per query
    results = []
    for qid, text in batch.queries.filter(is_gold=False).order_by("position").values_list("qid", "text"):
        row = by_qid.get(qid)
        crowd_label = row["label"] if row is not None else None
        crowd_label = crowd_label if isinstance(crowd_label, str) else None
        ruling = rulings.get(qid)
        label = ruling.label if ruling else crowd_label
        source = ADJUDICATED if ruling else CROWD if crowd_label else None
        accepted = machine.get(qid)
        if label is None and accepted is not None:
            label, source = accepted.label, accepted.source
        counts = {lab: int(row[lab]) if row is not None else 0 for lab in LABELS}
        kept_votes = by_item.get(qid, [])
        results.append(
            {
                "qid": qid,
                "query": text,
                "label": label,
                # share of the votes that gave the label (null: no label or no votes)
                "agreement": round(counts.get(label, 0) / len(kept_votes), 4) if label and kept_votes else None,
                "label_source": source,
                "machine_confidence": accepted.confidence if accepted and source == accepted.source else None,
                "crowd_label": crowd_label,
                "adjudicated": ruling is not None,
                "adjudication": (
                    {
                        "label": ruling.label,
                        "label_name": LABEL_NAMES[ruling.label],
                        "reason": ruling.reason,
                        "by": ruling.decided_by.get_username(),
                        "at": ruling.decided_at.isoformat(),
                    }
                    if ruling
                    else None
                ),
                "disputed": bool(row["disputed"]) if row is not None else False,
                "too_few_votes": bool(row["too_few_votes"]) if row is not None else True,
                "votes": sorted(by_item.get(qid, []), key=lambda v: v["worker"]),
                "machine": opinions.get(qid),
                "counts": counts,
                "invalid": invalid.get(qid, 0),
                "dawid_skene": ds_labels.get(qid),
                "ds_posterior": ds_posterior.get(qid),
                "ds_posteriors": ds_posteriors.get(qid),
            }
        )
    return results


def crowd_labels(batch: Batch, answers: BatchAnswers | None = None) -> dict[str, LabelSource]:
    """The crowd's labels of ``batch`` and its derived batches, each adjudicated or crowd majority."""
    answers = answers or BatchAnswers(batch)
    rulings = answers.rulings
    return {qid: LabelSource(label, ADJUDICATED if qid in rulings else CROWD) for qid, label in answers.labels.items()}


def labels_with_sources(batch: Batch, answers: BatchAnswers | None = None) -> dict[str, LabelSource]:
    """``qid -> LabelSource`` of every labelled query of ``batch``: the crowd first, else an accepted machine label."""
    return machine_accepted(batch) | crowd_labels(batch, answers)


def source_counts(batch: Batch, answers: BatchAnswers | None = None) -> dict[str, int]:
    """How many labelled queries of ``batch`` take their label from each of :data:`SOURCES`."""
    answers = answers or BatchAnswers(batch)

    def count() -> dict[str, int]:
        return dict(Counter(source.source for source in labels_with_sources(batch, answers).values()))

    return answers_cached(answers, "sources", count)
