"""The interface every pre-labeller implements, and the registry that finds one by name.

A pre-labeller labels queries with one of :mod:`genderbias.labels` and a confidence in [0, 1]. What is
stored is keyed by its ``name``, ``model`` and ``prompt_version``: change any of them and the stored
pre-labels are new ones, kept beside the old. Pure: no Django; a pre-labeller never writes to the database.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from core.errors import ProviderError
from core.lazy_registry import LazyRegistry


class PreLabelError(ProviderError):
    """The pre-labelling model refused (``upstream`` False) or failed (``upstream`` True) a call."""

    def __init__(self, message: str, status: int | None = None, *, upstream: bool | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.upstream = upstream if upstream is not None else (status is not None and (status >= 500 or status == 429))


class PreLabelStopped(PreLabelError):
    """A labeller stopped before labelling every query; ``partial`` holds, in the order asked, the
    predictions it did make (``None``: not labelled in this run), so that what it did is kept; ``status``
    and ``upstream`` as :class:`PreLabelError`'s."""

    def __init__(self, message: str, partial: list[Prediction | None], *args: Any, **kwargs: Any) -> None:
        super().__init__(message, *args, **kwargs)
        self.partial = partial


@dataclass(frozen=True)
class Prediction:
    """One query's pre-label: ``label`` (a code of :data:`genderbias.labels.LABELS`; ``None``: the
    labeller could not say), its ``confidence`` in [0, 1], and ``detail`` (JSON: the rule, the votes ...)."""

    label: str | None
    confidence: float
    detail: dict[str, Any] = field(default_factory=dict)

    def __iter__(self):
        """``label, confidence = prediction``."""
        return iter((self.label, self.confidence))


@dataclass
class Usage:
    """What a labeller spent so far (zero for the rules): calls, tokens, cost in USD, and answers."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: Decimal = Decimal("0")
    cached_queries: int = 0  #: queries answered wholly from the cache
    sampled_queries: int = 0  #: queries for which the model was asked
    unparseable: int = 0  #: answers that were not a label (excluded from the votes)
    answers: int = 0  #: answers drawn from the model (not from the cache)
    logprob_answers: int = 0  #: of which came with log-probabilities
    #: calls made one answer at a time because the server gave fewer choices than ``n`` asked (llama.cpp)
    separate_calls: int = 0


class PreLabeller(ABC):
    """Labels queries (see the module docstring)."""

    name: str = ""
    model: str = ""
    prompt_version: str = ""
    #: Whether its labels are a language model's: what the venues' checklists declare as LLM use.
    language_model: bool = False

    def __init__(self) -> None:
        self.usage = Usage()

    @abstractmethod
    def label(self, queries: Sequence[tuple[str, str]]) -> list[Prediction]:
        """One prediction per ``(qid, text)``, in the same order."""


#: The project's pre-labellers, imported when first asked for.
BUILT_IN = {
    "rules": "annotation.machine.prelabellers.rules",
    "openai": "annotation.machine.prelabellers.openai_chat",
    "trained": "annotation.machine.prelabellers.trained",
}
_REGISTRY: LazyRegistry[PreLabeller] = LazyRegistry("pre-labeller", BUILT_IN)


def register(name: str) -> Callable[[type[PreLabeller]], type[PreLabeller]]:
    """Class decorator: make a pre-labeller available as ``get_prelabeller(name)``."""
    return _REGISTRY.register(name)


def prelabeller_class(name: str) -> Callable[..., PreLabeller]:
    return _REGISTRY.get_class(name)


def get_prelabeller(name: str, **kwargs: Any) -> PreLabeller:
    """A new pre-labeller (``kwargs`` go to its constructor)."""
    return prelabeller_class(name)(**kwargs)


def is_language_model(name: str) -> bool:
    """Whether the pre-labeller registered as ``name`` is a language model; False for a name no longer registered."""
    if name not in _REGISTRY:
        return False
    return bool(getattr(prelabeller_class(name), "language_model", False))


def prelabeller_names() -> list[str]:
    return _REGISTRY.names()
