"""The settings of a batch: what ``create_batch`` records and the rules it checks, built from the
options the providers declare (:mod:`annotation.crowd.providers.options`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, fields
from decimal import Decimal
from typing import Any

from django.conf import settings as django_settings

from annotation.crowd.providers.base import all_batch_options, provider_class, provider_names
from annotation.crowd.providers.options import (
    COMMON_OPTIONS,
    MAX_AUTO_APPROVAL_DELAY,
    MAX_LIFETIME,
    MAX_REWARD,
    MIN_LIFETIME,
    options_by_name,
)
from core.errors import ServiceError

_COMMON = options_by_name(COMMON_OPTIONS)


@dataclass(frozen=True)
class GoldQuery:
    """A query whose label is known, mixed into HITs to catch careless work."""

    qid: str
    text: str
    label: str


#: The shared options' defaults (immutable values: numbers, amounts, durations).
_DEFAULTS = {name: option.default for name, option in _COMMON.items()}


@dataclass
class BatchSettings:
    provider: str = "local"
    assignments_per_query: int = _DEFAULTS["assignments_per_query"]
    queries_per_hit: int = _DEFAULTS["queries_per_hit"]
    reward: Decimal = _DEFAULTS["reward"]
    lifetime: dt.timedelta = _DEFAULTS["lifetime"]
    assignment_duration: dt.timedelta = _DEFAULTS["assignment_duration"]
    #: How long MTurk waits before approving (and paying) work nobody reviewed: several syncs reject invalid work first.
    auto_approval_delay: dt.timedelta = _DEFAULTS["auto_approval_delay"]
    gold_per_hit: int = _DEFAULTS["gold_per_hit"]
    gold_pass_fraction: float = 1.0
    gold_feedback: bool = _DEFAULTS["gold_feedback"]
    #: A HIT that failed its gold check: its other answers ``discard``-ed or ``keep``-t (its pay is lost either way).
    failed_gold_answers: str = _DEFAULTS["failed_gold_answers"]
    seed: int = _DEFAULTS["seed"]
    #: The platform's own options (``CrowdProvider.batch_options`` stored ``into="provider_options"``).
    provider_options: dict = field(default_factory=dict)
    #: Quality thresholds applied at every sync (see annotation.quality.services.thresholds); None: off.
    warn_gold_accuracy: float | None = None
    block_gold_accuracy: float | None = None
    warn_agreement: float | None = None
    block_agreement: float | None = None
    min_answers_judged: int = _DEFAULTS["min_answers_judged"]
    #: USD re-offers and escalations may add to the estimate (annotation.quality.services.budget); None: no limit.
    extra_budget: Decimal | None = None
    #: Share of the training queries (create_batch's ``training``) a worker must get right first.
    training_pass_fraction: float = _DEFAULTS["training_pass_fraction"]

    def validate(self) -> None:
        """Refuse settings MTurk would refuse, before anything is created or paid for."""
        if self.provider not in provider_names():
            raise ServiceError(f"unknown provider {self.provider!r}; choose one of {', '.join(provider_names())}")
        platform = provider_class(self.provider)
        if self.assignments_per_query < 1:
            raise ServiceError("assignments per HIT must be at least 1")
        if not 1 <= self.queries_per_hit <= 100:
            raise ServiceError("queries per HIT must be between 1 and 100")
        check_amount(self.reward, "reward", minimum="0.01", maximum=MAX_REWARD)
        for name, value, low, high in (
            ("lifetime", self.lifetime, MIN_LIFETIME, MAX_LIFETIME),
            ("assignment duration", self.assignment_duration, MIN_LIFETIME, MAX_LIFETIME),
            ("auto-approval delay", self.auto_approval_delay, 0, MAX_AUTO_APPROVAL_DELAY),
        ):
            if not low <= value.total_seconds() <= high:
                raise ServiceError(f"{name} must be between {low} s and {high} s (got {value})")
        own = _option_keys("provider_options")[self.provider]
        if self.provider_options and not own:
            raise ServiceError(_not_taken("provider_options", self.provider_options))
        platform.check_settings(self)
        # Another platform's options: refused, never dropped unseen.
        foreign = {key for key in self.provider_options if key not in own and _takers({key})}
        if foreign:
            raise ServiceError(_not_taken("provider_options", foreign))
        if self.gold_per_hit < 0:
            raise ServiceError("gold queries per HIT cannot be negative")
        if self.provider_options:
            check_bonus_rule(bonus_rule_of(self.provider_options), self.provider, self.gold_per_hit)
        if not 0 < self.gold_pass_fraction <= 1:
            raise ServiceError("the gold pass fraction must be in (0, 1]")
        validate_thresholds({name: getattr(self, name) for name in (*THRESHOLD_FIELDS, "min_answers_judged")})
        if self.extra_budget is not None:
            check_amount(self.extra_budget, "extra budget", minimum="0")


def settings_from_options(values: Mapping[str, Any]) -> BatchSettings:
    """The settings made of the options' values as the shells read them; a missing one keeps its default.
    Every platform's options are read, so that a value for another platform is refused, never dropped."""
    kwargs: dict[str, Any] = {"provider": values.get("provider") or "local"}
    stored: dict[str, dict] = {"provider_options": {}}
    for name, (option, _owner) in all_batch_options().items():
        value = values.get(name)
        if name == "provider" or value is None or value == [] or value == "":
            continue
        if option.into == "settings":
            kwargs[option.store_key] = value
            continue
        if option.kind == "flag" and not value:
            continue
        target = stored[option.into]
        *path, last = option.store_key.split(".")
        for part in path:
            target = target.setdefault(part, {})
        target[last] = str(value) if option.kind == "money" else value
    return BatchSettings(**kwargs, **stored)


def _option_keys(into: str) -> dict[str, set[str]]:
    return {
        name: {o.store_key.split(".")[0] for o in provider_class(name).own_options() if o.into == into}
        for name in provider_names()
    }


def _takers(given: set[str], into: str = "provider_options") -> list[str]:
    return [name for name, keys in _option_keys(into).items() if keys & given]


def _not_taken(into: str, given: Collection[str]) -> str:
    """Why provider options are refused: the platforms that take the ones ``given`` (else every
    platform that takes provider options)."""
    owners = _takers(set(given), into) or [n for n, keys in _option_keys(into).items() if keys]
    what = f"{' or '.join(provider_class(n).label for n in owners)} options"
    return f"{what} only apply to the {' or '.join(owners)} provider"


def check_amount(value: object, field: str, *, minimum: str = "0", maximum: str | None = None) -> Decimal:
    """``value`` as whole-cent dollars (:func:`core.amounts.parse_amount`), or a ``ServiceError`` naming ``field``."""
    from core.amounts import AmountError, parse_amount

    try:
        return parse_amount(value, field, minimum=minimum, maximum=maximum)
    except AmountError as exc:
        raise ServiceError(str(exc)) from None


def bonus_max_per_participant() -> Decimal:
    """What one participant may earn in bonuses from one batch (``BONUS_MAX_PER_PARTICIPANT_USD``, default 100)."""
    return Decimal(str(django_settings.BONUS_MAX_PER_PARTICIPANT_USD))


def assignments_per_participant(provider: str, hits: int | None) -> int:
    """How many assignments one participant can take in a batch: the provider's own number, else one per
    HIT (``hits`` None: counted as one)."""
    return provider_class(provider).assignments_per_participant or max(1, hits or 1)


def bonus_rule_of(options: dict | None):
    """The batch's bonus rule from its provider options, or None; a ``ServiceError`` naming the field."""
    from annotation.crowd.bonus_rules import RuleError, rule_of_options

    try:
        return rule_of_options(options)
    except RuleError as exc:
        raise ServiceError(str(exc)) from None


def check_bonus_rule(rule, provider: str, gold_per_hit: int, hits: int | None = None) -> None:
    """Refuse a rule under which one participant could earn more than ``BONUS_MAX_PER_PARTICIPANT_USD``
    from the batch (every assignment they can take, each with every check question right, plus a flat lump)."""
    from annotation.crowd.bonus_rules import RuleError, check_participant_most

    try:
        check_participant_most(
            rule, assignments_per_participant(provider, hits), gold_per_hit, bonus_max_per_participant()
        )
    except RuleError as exc:
        raise ServiceError(str(exc)) from None


#: Quality thresholds applied at every sync (``annotation.quality.services.thresholds``); None: off.
THRESHOLD_FIELDS = ("warn_gold_accuracy", "block_gold_accuracy", "warn_agreement", "block_agreement")


def validate_thresholds(values: dict[str, Any]) -> None:
    """Each threshold in [0, 1]; a block threshold not above its warn threshold; a positive minimum."""
    for name in THRESHOLD_FIELDS:
        value = values.get(name)
        if value is not None and not 0 <= value <= 1:
            raise ServiceError(f"{name.replace('_', ' ')} must be between 0 and 1 (got {value})")
    for what in ("gold_accuracy", "agreement"):
        warn, block = values.get(f"warn_{what}"), values.get(f"block_{what}")
        if warn is not None and block is not None and block > warn:
            raise ServiceError(
                f"the block threshold for {what.replace('_', ' ')} ({block}) is above the warn one ({warn})"
            )
    if values.get("min_answers_judged", 1) < 1:
        raise ServiceError("the minimum number of answers before judging a worker must be at least 1")


#: Every field of :class:`BatchSettings` (where each shell offers it: tests/annotation/crowd/test_batch_settings.py).
#: Stored on ``Batch`` under the same name, except ``seed`` (used once, to shuffle the queries into HITs).
OFFERED = tuple(f.name for f in fields(BatchSettings))
NOT_STORED = frozenset({"seed"})
