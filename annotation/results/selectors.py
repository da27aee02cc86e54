"""Reads of what a batch's answers add up to: judgments, labels and where each comes from,
agreement, what the review queue and the exports read, and a batch's state (:func:`batch_state`).

Only usable judgments count: a label (not an invalid answer) to a real query (not a gold
question) in an assignment that was not rejected and did not fail its gold questions.
Workers appear under their pseudonyms only.

Labels come from majority vote as in Rekabsaz & Schedl (SIGIR 2020): a label needs a
strict plurality of at least ``MIN_VOTES`` votes; ties and queries with too few votes are
set aside, never exported as labelled. Dawid-Skene is computed alongside to point at the
queries worth a second look, and every exported label carries its Dawid-Skene posterior.

A researcher's ruling (:class:`~annotation.models.Adjudication`) overrides the crowd:
the rule is "adjudication first, else majority vote"; such labels are exported with
``adjudicated`` true and counted on the dataset card.

Where a query's label comes from (:class:`LabelSource`): the crowd, a researcher's ruling,
or an accepted machine label. The queries routing accepted (:class:`Routing.accepted`) take
the machine's label, with its confidence, unless the crowd labelled them: a crowd label
always wins over the machine's (:func:`labels_with_sources`). The vocabulary and
:func:`machine_accepted` live here, below machine labelling (:mod:`annotation.machine.selectors`
reads the crowd's answers through :class:`BatchAnswers`), so that every sub-domain may use them.

Read-only, apart from the ``results`` cache (:func:`_cached`), which only saves recomputation.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

from django.db import DatabaseError, transaction
from django.db.models import Count, Max, Q

from annotation.crowd.selectors import (
    WORK_KEYS,
    answer_counts,
    batch_progress,
    counts_answers,
    crowd_batch_ids,
    is_machine_labelled,
    query_texts,
    spent,
)
from annotation.models import Adjudication, Assignment, Batch, Escalation, Judgment, PreLabel, Routing
from annotation.results.review import next_query, review_rows
from core import methods
from core import selectors as core_selectors
from core.version import code_key
from genderbias.labels import LABEL_NAMES, LABELS

if TYPE_CHECKING:
    import pandas as pd


logger = logging.getLogger(__name__)
T = TypeVar("T")

#: A single vote is one opinion, not agreement; a label needs at least this many votes.
MIN_VOTES = 2
CITATION = (
    "Navid Rekabsaz and Markus Schedl. 2020. Do Neural Ranking Models Intensify Gender Bias? "
    "In Proceedings of SIGIR 2020, 2065-2068. https://doi.org/10.1145/3397271.3401280"
)


# --- where a query's label comes from ---


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


def machine_accepted(batch: Batch) -> dict[str, LabelSource]:
    """The machine labels routing accepted for ``batch`` (none when it was not routed); a cascade's
    (``Routing.stages``): each stage's accepted queries with its own labeller's label."""
    routing = latest_routing(batch)
    if routing is None or not routing.accepted:
        return {}
    stages = routing.stages or [
        {
            "labeller": routing.labeller,
            "model": routing.model,
            "prompt_version": routing.prompt_version,
            "accepted": routing.accepted,
        }
    ]
    found: dict[str, LabelSource] = {}
    for stage in stages:
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
    """The judgments that count: real queries, a label, from work whose answers count
    (:func:`annotation.crowd.selectors.counts_answers`: the batch's rule for failed gold checks)."""
    return Judgment.objects.filter(
        counts_answers("assignment__"),
        batch_query__batch__in=crowd_batch_ids(batch),
        batch_query__is_gold=False,
        label__isnull=False,
    )


def judgments_frame(batch: Batch) -> pd.DataFrame:
    """One row per usable judgment: ``item`` (qid), ``worker`` (pseudonym), ``label``, in the order
    answered (by assignment): a worker's repeated answer to a query counts once, the latest
    (:func:`genderbias.crowd.aggregation.one_answer_per_worker`, applied by every aggregator)."""
    import pandas as pd

    rows = (
        usable_judgments(batch)
        .order_by("assignment_id", "pk")
        .values_list("batch_query__qid", "assignment__worker__pseudonym", "label")
    )
    return pd.DataFrame(list(rows), columns=["item", "worker", "label"], dtype=object)


#: A vote's hand signals when none were recorded (another provider's page): unknown, not zero.
NO_SIGNALS = {"pastes": None, "tab_leaves": None, "item_ms": None}


def vote_hand_signals(batch: Batch) -> dict[tuple[str, str], dict[str, int | None]]:
    """Per (qid, worker pseudonym) of :func:`judgments_frame`'s votes, the hand signals of the answer
    that counts (the latest, as :func:`judgments_frame` orders them): pastes, tab leaves, milliseconds."""
    rows = (
        usable_judgments(batch)
        .order_by("assignment_id", "pk")
        .values_list("batch_query__qid", "assignment__worker__pseudonym", *NO_SIGNALS)
    )
    return {(qid, worker): dict(zip(NO_SIGNALS, values, strict=True)) for qid, worker, *values in rows}


def machine_opinions(batch: Batch) -> dict[str, dict[str, Any]]:
    """``qid -> {label, confidence, labeller, model}``: the machine's label of every query of ``batch``, accepted
    or not, from the labeller routing used (the latest routing's, else its calibration sample's); empty
    when no machine labelled it. What a lab audits the machine against the crowd with, item by item."""
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
    """A key that changes whenever what ``batch``'s answers add up to may change.

    Everything :class:`BatchAnswers`, :func:`query_results` and :func:`agreement` read: the
    batch (its row and creation time: a key never outlives a batch whose id is reused), the
    crowd batches whose answers count (:func:`crowd_batch_ids`), their assignments (how many,
    in which state, the last submitted and reviewed), their judgments, the researchers'
    rulings and the routing in force with its machine labels. A few aggregate queries:
    what they stand for (Dawid-Skene, bootstraps) is the expensive part.

    ``own_judgments`` and ``own_assignments``: :func:`judgment_counts` and :func:`assignment_counts`
    of the batch alone, when the caller read them in this request (for its progress); they stand
    for the answers when no derived batch adds its own.
    """
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
        # ``created``: a labeller run again with the same identity rewrites its rows in place (same ids)
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
    """The rulings on the queries of the batches ``batch_ids``, for counting them.

    Rulings are few (a researcher's, one by one): each ruling's batch is read through its
    query's primary key, so counting reads the rulings, not the batch's queries (SQLite, which
    keeps no statistics, went along every query of the batch: 50,000 index searches at 50,000
    queries, for a handful of rulings).
    """
    from django.db.models import OuterRef, Subquery

    from annotation.models import BatchQuery

    batch_of = Subquery(BatchQuery.objects.filter(pk=OuterRef("batch_query_id")).order_by().values("batch_id")[:1])
    return Adjudication.objects.alias(of_batch=batch_of).filter(of_batch__in=batch_ids).order_by()


def _cached(answers: BatchAnswers, kind: str, compute: Callable[[], T]) -> T:
    """``compute()`` once per answer version of ``answers.batch``, shared by every worker.

    The ``results`` cache (:func:`remembered`) holds it under the batch's
    :func:`answers_version`; within one request the value is also kept on ``answers``.
    """
    if kind in answers.memo:
        return answers.memo[kind]
    value = remembered(
        f"batch-{answers.batch.pk}:{answers.version}:{kind}",
        compute,
        generation=(f"batch-{answers.batch.pk}", answers.version),
    )
    answers.memo[kind] = value
    return value


def remembered(key: str, compute: Callable[[], T], *, generation: tuple[str, str] | None = None) -> T:
    """The value kept under ``key`` in the ``results`` cache, else ``compute()``, kept there.

    The ``results`` cache (``settings.CACHES``: the database's ``results_cache`` table, or
    Redis) is shared by every worker: what one computed, the others read. ``key`` must name
    everything the value depends on (a version); the code's version (:func:`core.version.code_key`)
    is added here, so figures the code computed before a deployment are not served after it. A
    cache that cannot be read or written
    (its table not created yet) only costs the recomputation, never the page.

    The cache is bounded (:mod:`core.db.bounded_cache`, ``RESULTS_CACHE_MAX_BYTES``): entries past
    the bound go oldest first. ``generation``: ``(name, version)`` of what the value belongs to
    (``("batch-17", answers version)``); storing it removes the name's entries of other versions,
    so a batch keeps the figures of its current answers only.
    """
    from django.conf import settings

    from core.db import bounded_cache

    if not settings.RESULTS_CACHE_SECONDS:
        return compute()
    code = code_key()
    key = f"{code}:{key}"  # what another version of the code computed is never served
    cached = True
    try:
        value = _contained(lambda: bounded_cache.read("results", key))
    except DatabaseError as exc:  # e.g. the table not migrated yet
        logger.warning("results cache unavailable (%s); computing without it", exc)
        cached, value = False, bounded_cache.MISSING
    if value is bounded_cache.MISSING:
        value = compute()
        if cached:
            name, version = generation or ("", "")
            try:
                _contained(
                    lambda: bounded_cache.store(
                        "results",
                        key,
                        value,
                        max_bytes=settings.RESULTS_CACHE_MAX_BYTES,
                        generation=name,
                        version=f"{code}:{version}" if name else "",
                    )
                )
            except DatabaseError as exc:
                logger.warning("results cache unavailable (%s); not stored", exc)
    return value


def cached_for_answers(answers: BatchAnswers, kind: str, compute: Callable[[], T]) -> T:
    """``compute()`` once per answer version of ``answers.batch``, shared by every worker
    (:func:`_cached`): for a page that keeps what it shows of the answers (its rendered
    figures) rather than recomputing it from them at each view. ``kind`` names what is kept
    and everything besides the answers it depends on."""
    return _cached(answers, f"page:{kind}", compute)


def set_aside_rows(batch: Batch, answers: BatchAnswers | None = None) -> list[dict[str, Any]]:
    """The judged queries of ``batch`` without a label (disputed or too few votes, not settled),
    in natural qid order, each with ``qid``, ``query``, ``counts`` (votes per label) and
    ``dawid_skene``: the agreement page's table, cached with the answers apart from
    :func:`query_results` (a page of it then reads a few hundred rows, not every query's)."""
    from core.natural import natural_sorted

    answers = answers or BatchAnswers(batch)

    def rows() -> list[dict[str, Any]]:
        kept = ("qid", "query", "counts", "dawid_skene")
        chosen = (r for r in query_results(batch, answers) if r["label"] is None and r["votes"])
        return natural_sorted(({k: r[k] for k in kept} for r in chosen), lambda r: r["qid"])

    return _cached(answers, "set_aside_rows", rows)


def _contained(call: Callable[[], T]) -> T:
    """``call()``, inside a savepoint when a transaction is open: on PostgreSQL a failed cache
    query (a missing table) would otherwise abort the caller's whole transaction."""
    if not transaction.get_connection().in_atomic_block:
        return call()
    with transaction.atomic():
        return call()


class BatchAnswers:
    """A batch's usable judgments read once, and what is computed from them, each at most once.

    A page or an export needs the judgments frame, the majority votes and Dawid-Skene's
    estimate several times over; reading them through one ``BatchAnswers`` makes that one
    query and one Dawid-Skene fit per request instead of one per use.
    """

    def __init__(
        self,
        batch: Batch,
        *,
        own_judgments: dict[str, int | None] | None = None,
        own_assignments: dict[str, Any] | None = None,
    ) -> None:
        self.batch = batch
        #: :func:`judgment_counts` and :func:`assignment_counts` of the batch alone, when the caller
        #: read them in this request.
        self.own_judgments = own_judgments
        self.own_assignments = own_assignments
        #: What was computed from these answers in this request (see :func:`_cached`).
        self.memo: dict[str, Any] = {}

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
        import pandas as pd

        from genderbias.crowd.aggregation import majority_vote

        if self.frame.empty:
            return majority_vote(pd.DataFrame({"item": [], "worker": [], "label": []}, dtype=object))
        votes = majority_vote(self.frame)
        votes["too_few_votes"] = votes["votes"] < min_votes(self.batch)
        votes.loc[votes["too_few_votes"], "label"] = None
        votes["disputed"] = votes["disputed"] | votes["too_few_votes"]
        return votes

    @cached_property
    def dawid_skene(self):
        """Dawid-Skene's estimate (:class:`genderbias.crowd.aggregation.DawidSkeneResult`), None without judgments."""
        from genderbias.crowd.aggregation import dawid_skene

        # Through the shared cache too: every report of these answers (with or without a
        # bootstrap, per query) starts from the same fit.
        return _cached(self, "dawid_skene", lambda: None if self.frame.empty else dawid_skene(self.frame))

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
        """``qid -> label`` of every labelled query: "adjudication first, else majority vote".

        The one rule behind the counts of pages, the API, escalation and the exports: a
        settled query is labelled, whatever its votes, and never set aside.
        """
        votes = self.votes
        labelled = {str(q): label for q, label in votes["label"].items() if isinstance(label, str)}
        return labelled | self.rulings

    @cached_property
    def set_aside(self) -> list[str]:
        """Judged qids without a label: disputed or too few votes, and not settled by a researcher."""
        votes = self.votes
        return sorted(str(q) for q in votes.index[votes["disputed"]] if str(q) not in self.rulings)


def majority(batch: Batch) -> pd.DataFrame:
    """Majority vote per judged query; ``label`` is None (and ``disputed`` True) for ties and too few votes."""
    return BatchAnswers(batch).votes


def query_results(batch: Batch, answers: BatchAnswers | None = None) -> list[dict[str, Any]]:
    """Per query of the batch (gold excluded, batch order): label, pseudonymous votes, Dawid-Skene's view.

    ``label`` is the adjudicated label where a researcher settled the query (``adjudicated``
    true, ``crowd_label`` keeps the majority's), else the majority's. ``ds_posteriors`` maps
    every label to Dawid-Skene's posterior probability; ``ds_posterior`` is the largest.
    """
    answers = answers or BatchAnswers(batch)
    return _cached(
        answers, "query_results:v2", lambda: _query_results(batch, answers)
    )  # v2: machine, agreement, signals


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
    signals = vote_hand_signals(batch)
    by_item: dict[str, list[dict[str, Any]]] = {}
    for item, worker, label in frame.itertuples(index=False):
        by_item.setdefault(item, []).append(
            {"worker": worker, "label": label, **signals.get((item, worker), NO_SIGNALS)}
        )
    invalid: dict[str, int] = {}
    invalid_judgments = Judgment.objects.filter(batch_query__batch__in=crowd_batch_ids(batch), label=None)
    for qid in invalid_judgments.values_list("batch_query__qid", flat=True):
        invalid[qid] = invalid.get(qid, 0) + 1

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


def agreement(
    batch: Batch,
    *,
    bootstrap: int | None = None,
    seed: int = 0,
    answers: BatchAnswers | None = None,
    progress: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The agreement report of :mod:`genderbias.crowd.agreement` plus what the batch's records add.

    ``bootstrap`` resamples give alpha's 95% CI: by default ``settings.AGREEMENT_BOOTSTRAP_RESAMPLES``,
    the one number behind every interval shown (command, data card, page, API), so the
    same batch shows the same interval everywhere; 0 skips it (pages that show no CI).

    Keys added: ``batch``, ``provider``, ``labels`` (labelled queries per label, a
    researcher's ruling first, else the majority's), ``adjudicated`` (how many of them a
    researcher settled), ``set_aside`` (judged qids without a majority, including too few
    votes, that no researcher settled), ``method_disagreements`` (majority vs. Dawid-Skene), ``worker_confusion``
    (Dawid-Skene's estimate per worker: rows the true label, columns the label given, and
    the estimated accuracy), ``progress`` (:func:`batch_progress`, read afresh unless the caller
    read it in this request: ``progress``).
    """
    from django.conf import settings

    if bootstrap is None:
        bootstrap = settings.AGREEMENT_BOOTSTRAP_RESAMPLES
    answers = answers or BatchAnswers(batch)
    report = _cached(answers, f"agreement:{bootstrap}:{seed}", lambda: _agreement(batch, answers, bootstrap, seed))
    # Progress counts every assignment (taken, abandoned ...), not only answers: always read afresh.
    return report | {"progress": progress if progress is not None else batch_progress(batch)}


def agreement_summary(
    batch: Batch, *, answers: BatchAnswers | None = None, progress: dict[str, Any] | None = None
) -> dict[str, Any]:
    """What the batch page and its live fragment (polled every 2 s) show of :func:`agreement`:
    ``krippendorff_alpha``, ``judgments`` (usable), ``set_aside_count``, plus ``progress`` (as
    :func:`agreement`). Kept per answer version apart from the report, whose per-query lists
    (set aside, disagreements: 186 KB at 50,000 queries) a poll would otherwise read whole."""
    answers = answers or BatchAnswers(batch)

    def summary() -> dict[str, Any]:
        report = agreement(batch, bootstrap=0, answers=answers, progress={})
        return {
            "krippendorff_alpha": report["krippendorff_alpha"],
            "judgments": report["judgments"],
            "set_aside_count": len(report["set_aside"]),
        }

    kept = _cached(answers, "agreement-summary:0:0", summary)
    return kept | {"progress": progress if progress is not None else batch_progress(batch)}


def _agreement(batch: Batch, answers: BatchAnswers, bootstrap: int, seed: int) -> dict[str, Any]:
    import pandas as pd

    from genderbias.crowd.aggregation import compare_methods, majority_vote
    from genderbias.crowd.agreement import agreement_report

    frame = answers.frame
    if frame.empty:
        report: dict[str, Any] = {
            "krippendorff_alpha": None,
            "alpha_ci": [None, None],
            "bootstrap_resamples": 0,
            "per_category_alpha": dict.fromkeys(LABELS),
            "gwet_ac1": None,
            "per_category_ac1": dict.fromkeys(LABELS),
            "percent_agreement": None,
            "fleiss_kappa": None,
            "queries": 0,
            "judgments": 0,
            "workers": 0,
            "judgments_per_query": {},
            "labels": dict.fromkeys(LABELS, 0),
            "disputed": [],
            "per_worker": [],
            "confusion": {"labels": list(LABELS), "matrix": [[0] * len(LABELS) for _ in LABELS]},
        }
        disagreements: list[dict[str, Any]] = []
        worker_confusion: list[dict[str, Any]] = []
    else:
        report = agreement_report(frame, bootstrap=bootstrap, seed=seed)
        estimate = answers.dawid_skene
        compared = compare_methods(majority_vote(frame), estimate)
        worker_confusion = [
            {
                "worker": str(worker),
                "accuracy": estimate.worker_accuracy(worker),
                "labels": [str(label) for label in matrix.columns],
                "matrix": [[round(float(v), 4) for v in row] for row in matrix.to_numpy()],
            }
            for worker, matrix in sorted(estimate.confusion.items())
        ]
        disagreements = [
            {
                "qid": str(qid),
                "majority": row["majority"] if isinstance(row["majority"], str) else None,
                "dawid_skene": row["dawid_skene"] if isinstance(row["dawid_skene"], str) else None,
                "ds_posterior": None if pd.isna(row["ds_posterior"]) else float(row["ds_posterior"]),
            }
            for qid, row in compared.iterrows()
        ]
        # Each query's text beside its id (issue 45).
        texts = query_texts(batch, [d["qid"] for d in disagreements])
        for d in disagreements:
            d["query"] = texts.get(d["qid"], "")
    labelled = list(answers.labels.values())
    report["labels"] = {label: labelled.count(label) for label in LABELS}
    report["adjudicated"] = len(answers.rulings)
    report["set_aside"] = answers.set_aside
    report["worker_confusion"] = worker_confusion
    report["batch"] = batch.name
    report["provider"] = batch.provider
    report["method_disagreements"] = disagreements
    report["methods"] = crowd_model_used()
    return report


def crowd_model_used() -> dict[str, str]:
    """The crowd model that computes the Dawid-Skene labels and matrices now: its version, its words and
    the CHANGELOG.md entry that made it (kept with the agreement report, so its page names the model
    that computed what it shows)."""

    version = methods.CURRENT["crowd_model"]
    since = next((e.heading for e in core_selectors.changelog_entries() if ("crowd_model", version) in e.methods), "")
    return {"crowd_model": version, "crowd_model_text": methods.describe("crowd_model", version), "since": since}


def crowd_labels(batch: Batch, answers: BatchAnswers | None = None) -> dict[str, LabelSource]:
    """The crowd's labels of ``batch`` (with its derived batches': :func:`crowd_batch_ids`), each
    marked adjudicated or crowd majority."""
    answers = answers or BatchAnswers(batch)
    rulings = answers.rulings
    return {qid: LabelSource(label, ADJUDICATED if qid in rulings else CROWD) for qid, label in answers.labels.items()}


def labels_with_sources(batch: Batch, answers: BatchAnswers | None = None) -> dict[str, LabelSource]:
    """``qid -> LabelSource`` of every labelled query of ``batch``: the crowd first, else an accepted machine label."""
    return machine_accepted(batch) | crowd_labels(batch, answers)


def source_counts(batch: Batch, answers: BatchAnswers | None = None) -> dict[str, int]:
    """How many labelled queries of ``batch`` take their label from each source
    (:data:`SOURCES`: crowd majority, adjudicated, machine-accepted), cached
    with the answers (:func:`_cached`); the counts :func:`batch_state` shows."""
    answers = answers or BatchAnswers(batch)

    def count() -> dict[str, int]:
        found: dict[str, int] = {}
        for source in labels_with_sources(batch, answers).values():
            found[source.source] = found.get(source.source, 0) + 1
        return found

    return _cached(answers, "sources", count)


# --- what label sensitivity (metrics) and the review queue read besides the usable judgments ---


def adjudicated_labels(batch: Batch) -> dict[str, str]:
    """``qid -> label`` of every query of ``batch`` a researcher has settled (see :class:`Adjudication`).

    Label sensitivity's ``adjudicated`` policy reads adjudications through this function alone.
    """
    return dict(
        Adjudication.objects.filter(batch_query__batch__in=crowd_batch_ids(batch))
        .order_by("batch_query__position")
        .values_list("batch_query__qid", "label")
    )


def gold_labels(batch: Batch) -> dict[str, str]:
    """qid → known label of the batch's gold questions."""
    return dict(batch.queries.filter(is_gold=True).values_list("qid", "gold_label"))


def gold_judgments(batch: Batch) -> pd.DataFrame:
    """Answers to the batch's gold questions (``item``, ``worker`` pseudonym, ``label``), from
    assignments that were submitted or approved, and from those that failed their gold questions
    whether still awaiting review or already rejected for it, under either failed-gold rule
    (``Batch.failed_gold_answers``: the rule decides which answers count as labels and which work
    is paid, not what the crowd model learns of the worker). A wrong answer on a gold item is
    exactly what seeds a worker's confusion matrix: reading only the gold answers of assignments
    that passed, the model saw every gold answer right and rated every worker too well (issue 58).
    A worker meets a gold question in every HIT (and in every crowd part of a batch labelled by a
    machine first): each answer is kept, Dawid-Skene counts them all against the known label."""
    import pandas as pd

    answered = (Assignment.Status.SUBMITTED, Assignment.Status.APPROVED)
    failed = Q(assignment__gold_passed=False, assignment__status=Assignment.Status.REJECTED)
    rows = (
        Judgment.objects.filter(
            Q(assignment__status__in=answered) | failed,
            batch_query__batch__in=crowd_batch_ids(batch),
            batch_query__is_gold=True,
            label__isnull=False,
        )
        .order_by("assignment_id", "pk")
        .values_list("batch_query__qid", "assignment__worker__pseudonym", "label")
    )
    return pd.DataFrame(list(rows), columns=["item", "worker", "label"], dtype=object)


def escalated_qids(batch: Batch) -> set[str]:
    """qids that were among the disputed queries of any escalation of ``batch``."""
    return {
        str(qid)
        for disputed in Escalation.objects.filter(batch=batch).values_list("disputed", flat=True)
        for qid in disputed
    }


def gold_failed_qids(batch: Batch) -> set[str]:
    """qids of real queries with answers from assignments that failed their gold questions (not counted;
    none in a batch that keeps such answers: ``Batch.failed_gold_answers``), in ``batch`` and its crowd
    batches (:func:`crowd_batch_ids`: a machine-labelled batch's review queue shows its parts' gold
    failures, as its page counts them)."""
    return set(
        Judgment.objects.filter(
            batch_query__batch__in=crowd_batch_ids(batch), batch_query__is_gold=False, assignment__gold_passed=False
        )
        .exclude(assignment__hit__batch__failed_gold_answers="keep")
        .values_list("batch_query__qid", flat=True)
        .distinct()
    )


def gold_discarded_assignments(batch: Batch) -> int:
    """How many assignments of ``batch`` and its crowd batches lost their answers to real queries for
    failing gold (the batches that discard them, ``Batch.failed_gold_answers``): the crowd model still
    reads their gold answers (:func:`gold_judgments`), and the crowd-quality warning says the labels are
    a selection (:func:`genderbias.crowd.label_probabilities.crowd_quality`, reason ``selected``)."""
    return (
        Judgment.objects.filter(
            batch_query__batch__in=crowd_batch_ids(batch), batch_query__is_gold=False, assignment__gold_passed=False
        )
        .exclude(assignment__hit__batch__failed_gold_answers="keep")
        .values("assignment_id")
        .distinct()
        .count()
    )


def batch_of_query_set(query_set) -> Batch | None:
    """The batch whose export registered ``query_set`` (its newest such export), or None: a report on an
    exported set is described by that batch's facts (the paper bundle's methods paragraph)."""
    from annotation.models import Export

    export = Export.objects.filter(query_set=query_set).select_related("batch").order_by("-created", "-pk").first()
    return export.batch if export is not None else None


class SetAsidePages(Sequence):
    """:func:`set_aside_rows` as a sequence kept in pages of ``per_page`` rows per answer version
    (:func:`cached_for_answers`): its length and a slice of it read the pages they need only."""

    def __init__(self, batch: Batch, answers: BatchAnswers, per_page: int) -> None:
        self.batch, self.answers, self.per_page = batch, answers, per_page
        self.total = cached_for_answers(
            answers, "set-aside-total", lambda: len(set_aside_rows(self.batch, self.answers))
        )

    def __len__(self) -> int:
        return self.total

    def _page(self, number: int) -> list[dict]:
        start = number * self.per_page
        return cached_for_answers(
            self.answers,
            f"set-aside-page:{self.per_page}:{number}",
            lambda: set_aside_rows(self.batch, self.answers)[start : start + self.per_page],
        )

    def __getitem__(self, index):
        if not isinstance(index, slice):
            index = index + self.total if index < 0 else index
            if not 0 <= index < self.total:
                raise IndexError(index)
            return self[index : index + 1][0]
        start, stop, step = index.indices(self.total)
        if start >= stop:
            return []
        rows = [
            row
            for number in range(start // self.per_page, (stop - 1) // self.per_page + 1)
            for row in self._page(number)
        ]
        first = (start // self.per_page) * self.per_page
        return rows[start - first : stop - first : step]


# -- the review queue (kept per answer version and set of escalations) ---------------------------
#: Rows of the review queue kept together (:func:`review_queue`): a view reads the queue's statuses and
#: the one part holding the query it shows.
REVIEW_PART = 50


@dataclass
class ReviewQueue:
    """The review queue of a batch as a view reads it: ``rows`` (the queries with a status, in batch
    order, each with its ``qid``, ``statuses`` and ``index`` among all the batch's queries: what
    the walk and the counts need), ``total`` (the batch's queries) and, on demand, a row whole
    (:meth:`full`: votes, counts, Dawid-Skene, the ruling) from the part of the queue kept with it."""

    batch: Batch
    answers: BatchAnswers
    key: str
    rows: list[dict]
    total: int

    def full(self, row: dict | None) -> dict | None:
        """``row`` (one of :attr:`rows`) with everything the panel shows."""
        if row is None:
            return None
        part = next(i for i, kept in enumerate(self.rows) if kept["qid"] == row["qid"]) // REVIEW_PART
        rows = cached_for_answers(
            self.answers,
            f"review-rows:{self.key}:{REVIEW_PART}:{part}",
            lambda: (_kept_review_rows(self.batch, self.answers, escalated_qids(self.batch))[part : part + 1] or [[]])[
                0
            ],
        )
        # Not in its part: the part was made again after the escalations changed under the walk.
        return next((kept for kept in rows if kept["qid"] == row["qid"]), None) or review_row(
            self.batch, row["qid"], self.answers
        )

    def find(self, qid: str) -> dict | None:
        """The whole row of query ``qid``, whatever its status (one without a status is not kept)."""
        row = next((row for row in self.rows if row["qid"] == qid), None)
        return self.full(row) if row is not None else review_row(self.batch, qid, self.answers)


def _kept_review_rows(batch: Batch, answers: BatchAnswers, escalated: set[str]) -> list[list[dict]]:
    """The whole rows of the queries that have a status (``escalated``: the escalated queries), in
    batch order, each with its ``index`` among all the batch's queries, cut in parts of
    :data:`REVIEW_PART`."""
    rows = review_rows(query_results(batch, answers), escalated, gold_failed_qids(batch))
    kept = [row | {"index": index} for index, row in enumerate(rows) if row["statuses"]]
    return [kept[start : start + REVIEW_PART] for start in range(0, len(kept), REVIEW_PART)]


def review_queue(batch: Batch) -> ReviewQueue:
    """The queue, kept per answer version and set of escalated queries (:func:`cached_for_answers`):
    a view reads the statuses of the queries that have one (a few hundred small rows, not every
    query's) and one part of their whole rows."""
    answers = BatchAnswers(batch)
    escalated = escalated_qids(batch)  # escalations are not answers: read at each view
    # The escalated queries (the code's version is in every results-cache key: a deploy never reads old rows).
    key = hashlib.sha256(",".join(sorted(escalated)).encode()).hexdigest()[:16]

    def queue() -> dict:
        total = batch.queries.filter(is_gold=False).count()
        parts = _kept_review_rows(batch, answers, escalated)
        for part, rows in enumerate(parts):  # kept now: the first view of each part reads no results
            cached_for_answers(answers, f"review-rows:{key}:{REVIEW_PART}:{part}", lambda rows=rows: rows)
        walk = [
            {"qid": row["qid"], "statuses": row["statuses"], "index": row["index"]} for rows in parts for row in rows
        ]
        return {"rows": walk, "total": total}

    found = cached_for_answers(answers, f"review-queue:{key}", queue)
    return ReviewQueue(batch, answers, key, found["rows"], found["total"])


def review_row(batch: Batch, qid: str, answers: BatchAnswers | None = None) -> dict | None:
    """A query's row whatever its status (one without a status is not in the queue)."""
    rows = review_rows(query_results(batch, answers), escalated_qids(batch), gold_failed_qids(batch))
    return next((row for row in rows if row["qid"] == qid), None)


def following_query(batch: Batch, rows: list[dict], status: str, after: str) -> dict | None:
    """:func:`next_query` over the queue; a query ``after`` without a status is placed in batch order first."""
    if all(row["qid"] != after for row in rows):
        position = batch.queries.filter(is_gold=False, qid=after).values_list("position", flat=True).first()
        if position is not None:
            index = batch.queries.filter(is_gold=False, position__lt=position).count()
            rows = sorted([*rows, {"qid": after, "statuses": [], "index": index}], key=lambda row: row["index"])
    return next_query(rows, status, after)


# --- a batch's state: the batch page, the batch list, the dashboard, the dataset card -------------
# Here, below everything that shows it, because a machine-labelled batch's state counts its label
# sources (:func:`source_counts`) and sums its derived crowd batches (their progress and spend:
# :mod:`annotation.crowd.selectors`); it is the one reading of every batch's state (crowd,
# machine-labelled, calibration, routed), so no two pages, cards or texts disagree on a figure.


def batch_state(batch: Batch, progress: dict | None = None) -> dict[str, Any]:
    """What ``batch`` is and where it stands: the one reading behind the batch page, the batch list
    and the dashboard, so the three never disagree.

    Keys: ``kind`` (``crowd``; ``machine``: :func:`annotation.crowd.selectors.is_machine_labelled`; ``calibration`` or
    ``routed``: a derived batch), ``status`` (the status shown: "machine-labelled" for a
    machine-labelled batch), ``progress`` (:func:`annotation.crowd.selectors.batch_progress`), ``answered`` and
    ``expected`` assignments (answered: :data:`annotation.crowd.selectors.ANSWERED_WORK`, the same before
    and after a sync), ``gold_failures`` (assignments that failed their gold questions), ``fraction`` (of the bar), ``spent`` (USD), ``estimate`` (USD,
    None for a machine-labelled batch: what its own HITs would cost is never spent nor
    committed). A machine-labelled batch adds ``machine``: ``queries``, ``accepted``
    (labels the machine gave that stand), ``crowd`` (labelled by the crowd or a ruling),
    ``sample`` and ``routed`` (queries sent to the crowd in its calibration sample and
    routed batches), ``unlabelled``; ``parts`` (its crowd batches, each with its own
    state); ``answered``, ``expected`` and ``gold_failures`` (theirs, summed); ``spent`` (theirs,
    bonuses included), ``committed`` (what their published HITs may still cost) and ``planned`` (their drafts' estimates).
    """
    progress = progress if progress is not None else batch_progress(batch)
    kind = batch.purpose or "crowd"
    if kind == "crowd" and is_machine_labelled(batch):
        return _machine_state(batch, progress)
    return {
        "kind": kind,
        "status": batch.status,
        "progress": progress,
        "answered": progress["answered"],
        "expected": progress["assignments_expected"],
        "gold_failures": progress["failed_gold"],
        "fraction": progress["fraction"],
        "spent": spent(batch, progress["charged"]),
        "estimate": (batch.cost or {}).get("total"),
        "machine": None,
    }


def _machine_state(batch: Batch, progress: dict) -> dict[str, Any]:
    parts = []
    for part in batch.derived.order_by("created", "pk"):
        state = batch_state(part)
        estimate = Decimal(state["estimate"] or 0)
        live = part.status == Batch.Status.PUBLISHED
        state |= {
            "batch": part,
            "queries": state["progress"]["queries"],
            "committed": max(Decimal("0.00"), estimate - state["spent"]) if live else Decimal("0.00"),
            "planned": estimate if part.status == Batch.Status.DRAFT else Decimal("0.00"),
        }
        parts.append(state)
    counted = [p for p in parts if p["batch"].status != Batch.Status.CANCELLED]
    sources = source_counts(batch)
    queries = progress["queries"]
    labelled = sum(sources.values())
    machine = {
        "queries": queries,
        "accepted": sources.get(MACHINE, 0),
        "crowd": labelled - sources.get(MACHINE, 0),
        "sample": sum(p["queries"] for p in counted if p["kind"] == Batch.Purpose.CALIBRATION),
        "routed": sum(p["queries"] for p in counted if p["kind"] == Batch.Purpose.ROUTED),
        "unlabelled": queries - labelled,
    }
    return {
        "kind": "machine",
        "status": "machine-labelled",
        "progress": progress,
        "answered": sum(p["answered"] for p in parts),
        "expected": sum(p["expected"] for p in counted),
        "gold_failures": sum(p["gold_failures"] for p in parts),
        "fraction": labelled / queries if queries else None,
        "spent": sum((p["spent"] for p in parts), Decimal("0.00")),
        "committed": sum((p["committed"] for p in parts), Decimal("0.00")),
        "planned": sum((p["planned"] for p in parts), Decimal("0.00")),
        "estimate": None,
        "all_crowd_estimate": (batch.cost or {}).get("total"),
        "machine": machine,
        "parts": parts,
    }


def batch_overview(limit: int | None = None) -> list[dict]:
    """Batches, newest first, each with ``batch`` and its :func:`batch_state`."""
    return [
        {"batch": batch} | batch_state(batch)
        for batch in Batch.objects.select_related("query_set", "pool").order_by("-created", "-pk")[:limit]
    ]
