"""Pre-label a batch's queries with a machine (``annotation.machine.prelabellers``) and store the labels.

:func:`prelabel_batch` labels the batch's queries (gold ones too: they show how good the machine is) a
chunk at a time, each chunk's :class:`~annotation.models.PreLabel` rows replacing those of the same
(labeller, model, prompt version) in one transaction: a rerun is safe and, for the chat labeller, free,
as its answers are cached in :class:`~annotation.models.PreLabelAnswer` as they arrive.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Sum

from annotation.crowd.services.batches import LABELLED_SET_PREFIX, read_labelled, read_labelled_file
from annotation.machine.prelabellers import PreLabeller, get_prelabeller
from annotation.machine.prelabellers.chat_answers import DEFAULT_PROMPT, Prompt, Sampled, parse_answer
from annotation.machine.prelabellers.chat_client import ChatClient
from annotation.machine.prelabellers.interface import Prediction, PreLabelError, PreLabelStopped, Usage
from annotation.models import Batch, BatchQuery, PreLabel, PreLabelAnswer
from annotation.results.selectors.labels import BatchAnswers
from core.errors import ServiceError
from core.models import Job
from core.redaction import mask_secret
from core.selectors import chat_settings
from core.services.connections import ConnectionTestFailed, _failure
from core.services.once import LIVE_JOB
from core.services.storage import cache_dir
from genderbias.errors import InputError
from genderbias.labels import LABELS

CHUNK = 200
#: Why the chat labeller cannot run here (the page, the API and a job say the same).
OPENAI_UNCONFIGURED = (
    "the openai pre-labeller needs PRELABEL_API_URL and PRELABEL_MODEL (the environment or the Connections page)"
)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class DatabaseAnswerCache:
    """The chat labeller's answer cache over :class:`PreLabelAnswer` (used from one thread)."""

    def get_many(self, model: str, prompt_version: str, texts: Sequence[str]) -> dict[str, Sampled]:
        by_sha = {_sha(t): t for t in texts}
        rows = PreLabelAnswer.objects.filter(model=model, prompt_version=prompt_version, text_sha256__in=list(by_sha))
        return {
            by_sha[row.text_sha256]: Sampled(list(row.answers), row.prompt_tokens, row.completion_tokens, row.requests)
            for row in rows
        }

    def put(self, model: str, prompt_version: str, text: str, sampled: Sampled) -> None:
        PreLabelAnswer.objects.update_or_create(
            model=model,
            prompt_version=prompt_version,
            text_sha256=_sha(text),
            defaults={"text": text} | asdict(sampled),
        )


def cached_answers() -> list[dict]:
    """What the chat labeller's cache holds, per (model, prompt version): queries and answers kept."""
    rows = (
        PreLabelAnswer.objects.values("model", "prompt_version")
        .annotate(queries=Count("id"), requests=Sum("requests"))
        .order_by("model", "prompt_version")
    )
    return [dict(row) for row in rows]


@transaction.atomic
def clear_answer_cache(model: str, prompt_version: str | None = None) -> int:
    """Forget the cached answers of ``model`` (of one prompt version, or all), shared by every batch;
    how many queries' answers went. Stored pre-labels are kept. Nothing cached is refused (a typo must
    not pass for success)."""
    if not model:
        raise ServiceError("model: name the model whose cached answers to clear")
    rows = PreLabelAnswer.objects.filter(model=model)
    if prompt_version:
        rows = rows.filter(prompt_version=prompt_version)
    deleted, _ = rows.delete()
    if not deleted:
        version = f" (prompt version {prompt_version})" if prompt_version else ""
        raise ServiceError(f"model: no cached answers of {model!r}{version}")
    return deleted


#: ``Job.kind`` of a pre-labelling job (declared in :mod:`.background`).
PRELABEL_JOB_KIND = "annotation.prelabel"


def live_prelabel(batch: Batch, labeller: str, train: str | None = None) -> str | None:
    """Why a second pre-labelling of ``batch`` by the same machine is refused (409) while one is live,
    or None: called by :func:`core.services.once.claim` under the batch's row lock, so concurrent posts
    start one job paying for the answers. The same machine: the same labeller (for ``trained``, the same
    :class:`_TrainingSource`). A refused post's kept upload is deleted (no job will read it)."""
    live = Job.objects.filter(
        kind=PRELABEL_JOB_KIND, status__in=LIVE_JOB, arguments__0=batch.pk, arguments__1=labeller
    ).order_by("pk")
    source = _TrainingSource.of(train) if labeller == "trained" else None
    for job in live:
        if source is not None and not source.same_as(_TrainingSource.of((job.arguments[3:4] or [None])[0])):
            continue  # another training source: another machine
        if source is not None and source.upload:
            Path(str(train)).unlink(missing_ok=True)  # this post's kept upload: no job will read it
        return (
            f"batch {batch.name!r} is already being pre-labelled with {labeller} (job {job.pk}, {job.status}); "
            "wait for that job to end"
        )
    return None


@dataclass(frozen=True)
class _TrainingSource:
    """What a trained job learns from, as :func:`live_prelabel` compares two of them: an upload (kept
    under a random prefix) by its original name and content's SHA-256 (``None`` once its job read and
    deleted it: then the name alone decides, conservatively); anything else by its text."""

    name: str
    sha256: str | None = None
    upload: bool = False

    @classmethod
    def of(cls, train) -> _TrainingSource:
        path = Path(str(train))
        if train is None or str(train).startswith(BATCH_PREFIX) or not _kept_upload(path):
            return cls(str(train))
        try:
            with path.open("rb") as handle:
                digest = hashlib.file_digest(handle, "sha256").hexdigest()
        except OSError:  # read and deleted by its job already
            digest = None
        return cls(_UPLOAD_PREFIX.sub("", path.name), digest, upload=True)

    def same_as(self, other: _TrainingSource) -> bool:
        if self.upload != other.upload or self.name != other.name:
            return False
        return self.sha256 is None or other.sha256 is None or self.sha256 == other.sha256


#: ``--train batch:NAME``: train on that batch's human labels so far.
BATCH_PREFIX = "batch:"


def prompt_in_force() -> Prompt:
    """The chat labeller's prompt: ``PRELABEL_PROMPT_FILE`` when set, else the built-in one."""
    path = settings.PRELABEL_PROMPT_FILE
    if not path:
        return DEFAULT_PROMPT
    try:
        with open(path, encoding="utf-8") as handle:
            return Prompt.from_text(handle.read(100_000))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ServiceError(f"PRELABEL_PROMPT_FILE {path}: {exc}") from None


def prelabel_settings(names: str) -> dict[str, Any]:
    """``PRELABEL_<NAME>`` of each space-separated lower-case name, keyed by it (keywords, page figures)."""
    return {name: getattr(settings, f"PRELABEL_{name.upper()}") for name in names.split()}


def make_prelabeller(name: str, *, samples: int | None = None, train: str | Path | None = None) -> PreLabeller:
    """The pre-labeller ``name`` as this site configures it (``PRELABEL_*`` settings for ``openai``);
    ``train``: what ``trained`` (only, and always) learns from."""
    if (train is None) == (name == "trained"):
        if train is None:
            raise ServiceError("the trained pre-labeller needs training data: a labelled query file or batch:NAME")
        raise ServiceError(f"the {name} pre-labeller takes no training data")
    if samples is not None and samples < 1:
        raise ServiceError(f"samples: at least one answer per query, got {samples}")
    if name == "openai":
        connection = chat_settings()
        if not connection.configured:
            raise ServiceError(OPENAI_UNCONFIGURED)
        client = chat_client(
            connection,
            timeout=settings.PRELABEL_TIMEOUT,
            deadline=settings.PRELABEL_CALL_DEADLINE,
            max_attempts=settings.PRELABEL_MAX_ATTEMPTS,
        )
        return get_prelabeller(
            "openai",
            client=client,
            samples=samples or settings.PRELABEL_SAMPLES,
            budget=settings.PRELABEL_SAMPLE_BUDGET,
            cache=DatabaseAnswerCache(),
            **prelabel_settings(
                "max_samples temperature concurrency prompt_price completion_price job_deadline "
                "max_consecutive_failures max_failure_share"
            ),
        )
    if samples is not None:
        raise ValueError(f"the {name} pre-labeller takes no samples")
    if name == "trained":
        texts, labels, source = training_data(train)
        try:
            return get_prelabeller("trained", texts=texts, labels=labels, source=source)
        except ValueError as exc:  # data too few or of one label
            raise ServiceError(f"cannot train on {source}: {exc}") from None
    return get_prelabeller(name)


def chat_client(connection, *, timeout: float, deadline: float, max_attempts: int) -> ChatClient:
    """The chat labeller's client for ``connection`` (``core.selectors.chat_settings``) as this site configures it."""
    return ChatClient(
        connection.api_url,
        connection.api_key,
        connection.model,
        prompt=prompt_in_force(),
        timeout=timeout,
        deadline=deadline,
        max_attempts=max_attempts,
        max_bytes=settings.PRELABEL_MAX_RESPONSE_BYTES,
        **prelabel_settings("max_answer_chars top_logprobs max_answer_tokens"),
        token_limit=connection.token_limit,
        answer_format=connection.answer_format,
    )


#: The query the Connections page's test sends.
CONNECTION_TEST_QUERY = "how long is a pregnancy"


def check_chat() -> str:
    """The chat connection's test: the labeller's own request for one query through its client, which
    meets a refusal as a job would; what the server refused is reported, with what its answers gave."""
    connection = chat_settings()
    if not connection.model:
        raise ConnectionTestFailed("no model is set: name the model the endpoint serves")
    timeout = settings.CONNECTION_TEST_TIMEOUT
    key = connection.api_key
    try:
        client = chat_client(connection, timeout=timeout, deadline=2 * timeout, max_attempts=2)
        slots = client.capacity()  # as a job asks first
        sampled = client.sample(CONNECTION_TEST_QUERY, settings.PRELABEL_SAMPLES, settings.PRELABEL_TEMPERATURE)
    except (PreLabelError, ServiceError) as exc:
        http = getattr(exc, "http", None)
        if http is not None:
            raise _failure(http, connection.api_url, "API key", key) from None
        raise ConnectionTestFailed(mask_secret(str(exc), key)) from None
    named = sum(parse_answer(answer) is not None for answer in sampled.answers)
    with_logprobs = sum(isinstance(answer, dict) for answer in sampled.answers)
    request = (
        f"{client.answer_format}, {client.token_limit} {client.max_answer_tokens}, n {settings.PRELABEL_SAMPLES}"
        + (", log-probabilities" if client.top_logprobs else "")
    )
    message = (
        f"Language model: {connection.model} answered at {connection.api_url}. The labeller's request ({request}): "
        f"{len(sampled.answers)} answers in {sampled.requests} calls, {named} naming a label, {with_logprobs} with "
        "log-probabilities"
    )
    if slots is not None:
        message += f"; the server has {slots} slots"
    if client.refusals:
        message += "; the server refused " + "; ".join(client.refusals)
    if not named:
        message += f"; no answer named a label: try another answer format than {client.answer_format}, or another model"
    return mask_secret(message + ".", key)


#: The random prefix :func:`core.services.uploads.keep_upload` gives a kept upload (``<12 hex>-name``).
_UPLOAD_PREFIX = re.compile(r"^[0-9a-f]{12}-")


def _kept_upload(path: Path) -> bool:
    """Whether ``path`` is an upload kept for this run (``cache/uploads/``), which is ours to delete."""
    try:
        return path.resolve().parent == cache_dir("uploads").resolve()
    except OSError:
        return False


def training_data(train: str | Path) -> tuple[list[str], list[str], str]:
    """Texts, labels and the source's name of ``train``: a labelled query file or set, or ``batch:NAME``
    (that batch's human labels so far, gold left out: the machine is checked against them). An upload is
    named by its original name (its errors name no server path) and deleted once read."""
    train = str(train)
    if train.startswith(BATCH_PREFIX):
        name = train.removeprefix(BATCH_PREFIX)
        batch = Batch.objects.filter(name=name).first()
        if batch is None:
            raise ServiceError(f"no batch named {name!r} to train on")
        labels = BatchAnswers(batch).labels
        texts = dict(BatchQuery.objects.filter(batch=batch, is_gold=False).values_list("qid", "text"))
        qids = sorted(q for q in labels if q in texts)  # filtered here: no qid__in over a whole batch
        return [texts[q] for q in qids], [labels[q] for q in qids], train
    if train.startswith(LABELLED_SET_PREFIX):  # a labelled query set (imported from a labelled file)
        queries, name = read_labelled(train), train
    elif not _kept_upload(path := Path(train)):
        queries, name = read_labelled_file(path), path.name
    else:
        name = _UPLOAD_PREFIX.sub("", path.name)
        try:
            queries = read_labelled_file(path)
        except InputError as exc:  # the uploaded file's own name, not where the server kept it
            raise InputError(name, exc.line, exc.problem) from None
        finally:
            path.unlink(missing_ok=True)
    return [q.text for q in queries], [q.label for q in queries], name


#: What a trained labeller measured of itself, carried into its run's summary.
TRAINED_FIGURES = ("cv_accuracy", "cv_accuracy_std", "cv_folds", "cv_note", "training_size")


@dataclass
class PrelabelSummary:
    """What one run stored: counts per label, queries left unlabelled, mean confidence, spending."""

    labeller: str
    model: str
    prompt_version: str
    counts: dict[str, int] = field(default_factory=dict)
    unlabelled: int = 0
    mean_confidence: float | None = None
    usage: Usage = field(default_factory=Usage)
    #: A trained labeller's cross-validated accuracy (mean, standard deviation, folds) and training size.
    cv_accuracy: float | None = None
    cv_accuracy_std: float | None = None
    cv_folds: int | None = None
    #: Why there is no cross-validated accuracy, or which folds were left out ("" if none).
    cv_note: str = ""
    training_size: int | None = None

    @property
    def labelled(self) -> int:
        return sum(self.counts.values())


def prelabel_batch(
    batch: Batch, labeller: PreLabeller | str, *, samples: int | None = None, train: str | Path | None = None
) -> PrelabelSummary:
    """Pre-label every query of ``batch`` with ``labeller`` (a name or an object); a query the machine could
    not label gets no row and counts as unlabelled."""
    if isinstance(labeller, str):
        labeller = make_prelabeller(labeller, samples=samples, train=train)
    queries = list(BatchQuery.objects.filter(batch=batch).order_by("is_gold", "position"))
    machine = {"labeller": labeller.name, "model": labeller.model, "prompt_version": labeller.prompt_version}
    counts: Counter[str] = Counter()
    confidences: list[float] = []
    unlabelled = 0
    for start in range(0, len(queries), CHUNK):
        chunk = queries[start : start + CHUNK]
        stopped: PreLabelStopped | None = None
        try:
            predictions: Sequence[Prediction | None] = labeller.label([(q.qid, q.text) for q in chunk])
        except PreLabelStopped as exc:  # keep what it did, then say why it stopped
            predictions, stopped = exc.partial, exc
        rows = [
            PreLabel(batch_query=q, **machine, label=p.label, confidence=p.confidence, detail=p.detail)
            for q, p in zip(chunk, predictions, strict=True)
            if p is not None and p.label is not None
        ]
        # A query that is unlabelled now loses an older label of the same labeller, model and prompt;
        # one not labelled in this run (``None``: the labeller stopped first) keeps it.
        empty = [q for q, p in zip(chunk, predictions, strict=True) if p is not None and p.label is None]
        unlabelled += len(empty)
        counts.update(row.label for row in rows)
        confidences += [row.confidence for row in rows]
        with transaction.atomic():
            PreLabel.objects.filter(batch_query__in=empty, **machine).delete()
            PreLabel.objects.bulk_create(
                rows,
                update_conflicts=True,
                unique_fields=["batch_query", "labeller", "model", "prompt_version"],
                update_fields=["label", "confidence", "detail", "created"],
            )
        if stopped is not None:
            stored = sum(counts.values())
            raise PreLabelStopped(
                f"{labeller.name} ({labeller.model}) {stopped}. {stored} label(s) of this run are stored; "
                f"{len(queries) - start - sum(p is not None for p in predictions)} queries are left without "
                "a new label: run it again to ask only for those (the answers received are cached).",
                stopped.partial,
                stopped.status,
                upstream=stopped.upstream,
            )
    return PrelabelSummary(
        **machine,
        counts={code: counts[code] for code in LABELS},
        unlabelled=unlabelled,
        mean_confidence=sum(confidences) / len(confidences) if confidences else None,
        usage=labeller.usage,
        **{key: getattr(labeller, key) for key in TRAINED_FIGURES if hasattr(labeller, key)},
    )
