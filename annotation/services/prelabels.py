"""Pre-label a batch's queries with a machine (``annotation.prelabellers``) and store the labels.

:func:`prelabel_batch` asks a pre-labeller for the batch's queries (gold ones included:
they show how good the machine is) a chunk at a time and writes each chunk's
:class:`~annotation.models.PreLabel` rows in one transaction, replacing those of the same
(labeller, model, prompt version): rerunning is safe and, for the chat labeller, free,
since its answers are cached in :class:`~annotation.models.PreLabelAnswer` (written as
they arrive, so an interrupted run keeps what it paid for). A query the machine could
not label (every answer unparseable) gets no row and is counted as unlabelled.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction

from ..labels import LABELS
from ..models import Batch, BatchQuery, PreLabel, PreLabelAnswer
from ..prelabellers import PreLabeller, get_prelabeller
from ..prelabellers.base import Usage
from ..prelabellers.openai_chat import ChatClient, Sampled

CHUNK = 200


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
            defaults={
                "text": text,
                "answers": sampled.answers,
                "prompt_tokens": sampled.prompt_tokens,
                "completion_tokens": sampled.completion_tokens,
                "requests": sampled.requests,
            },
        )


def make_prelabeller(name: str, *, samples: int | None = None) -> PreLabeller:
    """The pre-labeller ``name`` as this site configures it (``PRELABEL_*`` settings for ``openai``)."""
    if name == "openai":
        client = ChatClient(settings.PRELABEL_API_URL, settings.PRELABEL_API_KEY, settings.PRELABEL_MODEL)
        return get_prelabeller(
            "openai",
            client=client,
            samples=samples or settings.PRELABEL_SAMPLES,
            temperature=settings.PRELABEL_TEMPERATURE,
            concurrency=settings.PRELABEL_CONCURRENCY,
            cache=DatabaseAnswerCache(),
            prompt_price=settings.PRELABEL_PROMPT_PRICE,
            completion_price=settings.PRELABEL_COMPLETION_PRICE,
        )
    if samples is not None:
        raise ValueError(f"the {name} pre-labeller takes no samples")
    return get_prelabeller(name)


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

    @property
    def labelled(self) -> int:
        return sum(self.counts.values())


def prelabel_batch(batch: Batch, labeller: PreLabeller | str, *, samples: int | None = None) -> PrelabelSummary:
    """Pre-label every query of ``batch`` with ``labeller`` (a name or an object); see the module docstring."""
    if isinstance(labeller, str):
        labeller = make_prelabeller(labeller, samples=samples)
    queries = list(BatchQuery.objects.filter(batch=batch).order_by("is_gold", "position"))
    counts: Counter[str] = Counter()
    confidences: list[float] = []
    unlabelled = 0
    for start in range(0, len(queries), CHUNK):
        chunk = queries[start : start + CHUNK]
        predictions = labeller.label([(q.qid, q.text) for q in chunk])
        rows = [
            PreLabel(
                batch_query=q,
                labeller=labeller.name,
                model=labeller.model,
                prompt_version=labeller.prompt_version,
                label=p.label,
                confidence=p.confidence,
                detail=p.detail,
            )
            for q, p in zip(chunk, predictions, strict=True)
            if p.label is not None
        ]
        unlabelled += len(chunk) - len(rows)
        counts.update(row.label for row in rows)
        confidences += [row.confidence for row in rows]
        with transaction.atomic():
            # A query that is unlabelled now loses an older label of the same labeller, model and prompt.
            PreLabel.objects.filter(
                batch_query__in=[q for q, p in zip(chunk, predictions, strict=True) if p.label is None],
                labeller=labeller.name,
                model=labeller.model,
                prompt_version=labeller.prompt_version,
            ).delete()
            PreLabel.objects.bulk_create(
                rows,
                update_conflicts=True,
                unique_fields=["batch_query", "labeller", "model", "prompt_version"],
                update_fields=["label", "confidence", "detail", "created"],
            )
    return PrelabelSummary(
        labeller=labeller.name,
        model=labeller.model,
        prompt_version=labeller.prompt_version,
        counts={code: counts[code] for code in LABELS},
        unlabelled=unlabelled,
        mean_confidence=sum(confidences) / len(confidences) if confidences else None,
        usage=labeller.usage,
    )
