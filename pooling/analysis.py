"""The choices an analysis is made with, and the one set of checks shared by pools and reports, so
a page, the API and a command get the same message, naming the setting as a page does ("rank
cutoff"). Light: forms import the choices from here without loading numpy or polars.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from core.errors import ServiceError
from genderbias.text import DEFAULT_MAGNITUDE, MAGNITUDES
from genderbias.text.tokenize import DEFAULT_TOKENIZER, TOKENIZERS

__all__ = [
    "DEFAULT_MAGNITUDE", "DEFAULT_TOKENIZER", "MAGNITUDES", "TOKENIZERS", "check_at_least_one", "check_magnitude",
    "check_same_collection", "check_tokenizer",
]  # fmt: skip


class _RankingRun(Protocol):
    name: str
    collection_id: int


def check_tokenizer(tokenizer: str) -> str:
    if tokenizer not in TOKENIZERS:
        raise ServiceError(f"unknown tokenizer {tokenizer!r}; choose one of {', '.join(TOKENIZERS)}")
    return tokenizer


def check_magnitude(magnitude: str) -> str:
    if magnitude not in MAGNITUDES:
        raise ServiceError(f"unknown magnitude {magnitude!r}; choose one of {', '.join(MAGNITUDES)}")
    return magnitude


def check_at_least_one(value: int, what: str) -> int:
    """``what`` (e.g. "rank cutoff", "pool depth") must be a whole number of at least 1."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ServiceError(f"{what} must be a whole number of at least 1, got {value!r}")
    return value


def check_same_collection(runs: Sequence[_RankingRun], what: str) -> None:
    """Runs compared together must rank one collection; ``what`` names the comparison ("a pool")."""
    if not runs:
        raise ServiceError("give at least one run")
    if len({run.collection_id for run in runs}) != 1:
        raise ServiceError(f"all runs of {what} must rank the same collection")
