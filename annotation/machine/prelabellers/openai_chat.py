"""The chat pre-labeller: any OpenAI-compatible chat-completions endpoint (:mod:`.chat_client`), its
answers read by :mod:`.chat_answers`; sampling and why: docs/prelabelling.md, "The chat labeller's confidence".

Answers are kept per (model, prompt version, query text) in an :class:`AnswerCache` (used from the calling
thread only), so a rerun asks only for what is missing. A job stops at ``job_deadline``, at its circuit
breaker (``max_consecutive_failures`` in a row, a share ``max_failure_share`` from :data:`MIN_FOR_SHARE`
queries on, a 401/403/404 at once) or when a server's first :data:`NAMELESS_AFTER` answers name no label:
:class:`~.interface.PreLabelStopped` carries what it did label. Pure: no Django.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import KW_ONLY, dataclass
from decimal import Decimal
from typing import Protocol

from annotation.machine.prelabellers.chat_answers import (
    ANSWER_FORMATS,
    PROMPT_VERSION,
    Sampled,
    parse_answer,
    settled,
    vote,
)
from annotation.machine.prelabellers.chat_client import ChatClient
from annotation.machine.prelabellers.interface import Prediction, PreLabelError, PreLabeller, PreLabelStopped, register

MIN_FOR_SHARE = 10
#: A job stops when none of this many answers drawn from the server named a label.
NAMELESS_AFTER = 10


class AnswerCache(Protocol):
    """Answers kept per (model, prompt version, query text)."""

    def get_many(self, model: str, prompt_version: str, texts: Sequence[str]) -> dict[str, Sampled]: ...

    def put(self, model: str, prompt_version: str, text: str, sampled: Sampled) -> None:
        """Keep ``sampled`` (all the answers known for ``text``, with their total tokens)."""


class MemoryCache:
    def __init__(self) -> None:
        self.entries: dict[tuple[str, str, str], Sampled] = {}

    def get_many(self, model: str, prompt_version: str, texts: Sequence[str]) -> dict[str, Sampled]:
        return {
            t: self.entries[(model, prompt_version, t)] for t in texts if (model, prompt_version, t) in self.entries
        }

    def put(self, model: str, prompt_version: str, text: str, sampled: Sampled) -> None:
        self.entries[(model, prompt_version, text)] = sampled


@register("openai")
@dataclass(eq=False)
class ChatPreLabeller(PreLabeller):
    """``max_samples`` defaults to ``samples`` (no second draw), ``budget`` to ``max_samples``."""

    prompt_version = PROMPT_VERSION
    language_model = True

    client: ChatClient
    _: KW_ONLY
    samples: int = 5
    max_samples: int | None = None
    budget: float | None = None
    temperature: float = 1.0
    concurrency: int = 4
    cache: AnswerCache | None = None
    prompt_price: Decimal = Decimal("0")
    completion_price: Decimal = Decimal("0")
    job_deadline: float | None = None
    max_consecutive_failures: int = 5
    max_failure_share: float = 0.25
    clock: Callable[[], float] = time.monotonic

    def __post_init__(self) -> None:
        super().__init__()
        if self.samples < 1:
            raise ValueError("samples must be at least 1")
        if not self.temperature > 0:
            raise ValueError("temperature must be above 0: the samples are meant to differ")
        self.model = self.client.model
        self.prompt_version = self.client.prompt_version
        self.max_samples = max(self.samples, self.max_samples or self.samples)
        self.budget = float(self.budget) if self.budget is not None else float(self.max_samples)
        if not self.budget > 0:
            raise ValueError("budget must be above 0 answers per query")
        self.concurrency = max(1, self.concurrency)
        self.cache = self.cache if self.cache is not None else MemoryCache()
        self.prompt_price, self.completion_price = Decimal(self.prompt_price), Decimal(self.completion_price)
        self.max_consecutive_failures = max(1, self.max_consecutive_failures)
        self.started: float | None = None  # the first label(): the job's deadline counts from it
        self.asked = self.failed = self.failed_in_a_row = 0
        self.stopped: str | None = None  # why the circuit breaker tripped
        self.drawn = self.named = 0  # answers drawn from the server, and of which named a label
        self._lock = threading.Lock()

    def _left(self) -> float | None:
        """Seconds left of the job's deadline (``None``: no deadline)."""
        if self.job_deadline is None or self.started is None:
            return None
        return self.job_deadline - (self.clock() - self.started)

    def _sample(self, text: str, n: int) -> Sampled | None:
        """One query's answers, in a worker thread; ``None`` when the job stopped before it began. The
        failure counts are kept as each call ends, so a query the pool took up is not sent once the breaker trips."""
        with self._lock:
            if self.stopped is not None:
                return None
        left = self._left()
        try:
            if left is not None and left <= 0:
                raise PreLabelError(f"the job's deadline of {self.job_deadline:g} s passed", upstream=True)
            sampled = self.client.sample(text, n, self.temperature, deadline=left)
        except PreLabelError as exc:
            with self._lock:
                self.asked += 1
                self.failed += 1
                self.failed_in_a_row += 1
                if self.stopped is None and exc.status in (401, 403, 404):  # every query would be refused
                    self.stopped = f"the endpoint refused the call (HTTP {exc.status})"
                if self.stopped is None and getattr(self.client, "format_refused", False):
                    self.stopped = "the endpoint refused the answer format (PRELABEL_ANSWER_FORMAT)"
                self.stopped = self.stopped or self._breaker()
            raise
        with self._lock:
            self.asked += 1
            self.failed_in_a_row = 0
            self.drawn += len(sampled.answers)
            self.named += sum(parse_answer(answer) is not None for answer in sampled.answers)
            if self.stopped is None and self.drawn >= NAMELESS_AFTER and not self.named:
                self.stopped = self._nameless()
        return sampled

    def _nameless(self) -> str:
        """Why a job whose answers never name a label stops, and what to try."""
        answer_format = getattr(self.client, "answer_format", "text")
        others = [f for f in ANSWER_FORMATS if f != answer_format]
        return (
            f"none of the {self.drawn} answers the model gave named a label ({self.model}, "
            f"PRELABEL_ANSWER_FORMAT={answer_format}): it does not answer the prompt in this format; try "
            f"another format ({' or '.join(others)}: a structured one holds the model to a label), or another model"
        )

    def _breaker(self) -> str | None:
        """Why the job must stop now, or ``None``."""
        if self.failed_in_a_row >= self.max_consecutive_failures:
            return f"{self.failed_in_a_row} queries in a row failed"
        if self.asked >= MIN_FOR_SHARE and self.failed / self.asked >= self.max_failure_share:
            return f"{self.failed} of {self.asked} queries failed"
        left = self._left()
        if left is not None and left <= 0:
            return f"the job's deadline of {self.job_deadline:g} s passed"
        return None

    def _spend(self, sampled: Sampled) -> None:
        self.usage.requests += sampled.requests
        self.usage.prompt_tokens += sampled.prompt_tokens
        self.usage.completion_tokens += sampled.completion_tokens
        self.usage.answers += len(sampled.answers)
        self.usage.logprob_answers += sum(isinstance(answer, dict) for answer in sampled.answers)
        self.usage.cost += (
            sampled.prompt_tokens * self.prompt_price + sampled.completion_tokens * self.completion_price
        ) / 1_000_000

    def _ask(self, wanted: dict[str, int], known: dict[str, Sampled]) -> tuple[list[PreLabelError], set[str]]:
        """Ask for ``wanted[text]`` more answers of each text, merged into ``known`` and the cache as they
        are collected; the failures, and the texts not asked (the job stopped first)."""
        failures: list[PreLabelError] = []
        unasked: set[str] = set()
        if not wanted:
            return failures, unasked
        with self._lock:
            self.stopped = self.stopped or self._breaker()
        if self.stopped is not None:
            return failures, set(wanted)
        capacity = self.client.capacity() if hasattr(self.client, "capacity") else None
        workers = min(self.concurrency, capacity or self.concurrency, len(wanted))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures: dict[str, Future] = {t: pool.submit(self._sample, t, n) for t, n in wanted.items()}
            for text, future in futures.items():  # collected in this thread: the cache is not shared
                try:
                    sampled = future.result()
                except PreLabelError as exc:
                    failures.append(exc)
                    continue
                if sampled is None:  # not asked: the job stopped first
                    unasked.add(text)
                    continue
                self._spend(sampled)
                before = known.get(text, Sampled([]))
                merged = Sampled(
                    before.answers + sampled.answers,
                    before.prompt_tokens + sampled.prompt_tokens,
                    before.completion_tokens + sampled.completion_tokens,
                    before.requests + sampled.requests,
                )
                self.cache.put(self.model, self.prompt_version, text, merged)
                known[text] = merged
        return failures, unasked

    def second_draw(self, texts: Sequence[str], known: dict[str, Sampled]) -> dict[str, int]:
        """The answers to add per query after the first draw, decided from the answers held alone (a rerun
        decides the same): an unsettled query is drawn up to ``max_samples`` if that fits in what is left
        of ``budget × len(texts)`` answers (those held count), most confident first, ties in the order asked."""
        held = {t: len(known[t].answers) if t in known else 0 for t in texts}
        left = self.budget * len(texts) - sum(min(n, self.max_samples) for n in held.values())
        candidates = [
            t
            for t in texts
            if self.samples <= held[t] < self.max_samples and not settled(known[t].answers[: self.max_samples])
        ]
        confidence = {t: vote(known[t].answers[: self.max_samples]).confidence for t in candidates}
        wanted: dict[str, int] = {}
        for text in sorted(candidates, key=lambda t: -confidence[t]):  # stable: ties in the order asked
            need = self.max_samples - held[text]
            if need <= left + 1e-9:
                wanted[text] = need
                left -= need
        return wanted

    def label(self, queries: Sequence[tuple[str, str]]) -> list[Prediction]:
        """Predictions from the cache and the endpoint; failures raise :class:`PreLabelStopped` with what was labelled."""
        if self.started is None:
            self.started = self.clock()
        texts = list(dict.fromkeys(text for _, text in queries))
        known = self.cache.get_many(self.model, self.prompt_version, texts)
        held = {t: known[t].answers if t in known else [] for t in texts}
        # A query whose answers held carry log-probabilities is settled (a server that ignores n gave one).
        first = {t: self.samples - len(a) for t, a in held.items() if len(a) < self.samples and not settled(a)}
        failures, unasked = self._ask(first, known)
        second: dict[str, int] = {}
        if self.stopped is None:
            second = self.second_draw(texts, known)
            more_failures, more_unasked = self._ask(second, known)
            failures += more_failures
            unasked |= more_unasked
        asked = set(first) | set(second)
        self.usage.cached_queries += len(texts) - len(asked)
        self.usage.sampled_queries += len(asked)
        self.usage.separate_calls = getattr(self.client, "separate_calls", 0)
        predictions = {
            t: vote(known[t].answers[: self.max_samples])
            for t in texts
            if len(known.get(t, Sampled([])).answers) >= self.samples or (t in known and settled(known[t].answers))
        }
        for prediction in predictions.values():
            self.usage.unparseable += prediction.detail["unparseable"]
        stop = self.stopped
        if not failures and stop is None:
            return [predictions[text] for _, text in queries]
        # What was answered is cached and its labels are kept: a rerun asks only for the rest.
        failure = failures[0] if failures else None
        count = len(failures)
        why = f"stopped: {stop}" if stop else f"{count} quer{'y' if count == 1 else 'ies'} failed"
        message = f"{why} (first: {failure})" if failure else why
        if unasked:
            message += f"; {len(unasked)} not asked"
        partial = [predictions.get(text) for _, text in queries]
        raise PreLabelStopped(
            message, partial, failure and failure.status, upstream=failure.upstream if failure else True
        )
