"""A batch's options, declared once: each option's name, kind, range or choices, default and help.

Every platform takes :data:`COMMON_OPTIONS`, each provider adds its own; every shell is derived from
the declaration and reads a value by :meth:`BatchOption.parse`, so the shells cannot drift apart.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from core.amounts import AmountError, parse_amount
from genderbias.numbers import NumberError, parse_count, parse_decimal

#: The kinds of option, and what a value of each is once read.
KINDS = {
    "whole": "int",
    "share": "float in [minimum, maximum]",
    "money": "Decimal of whole cents",
    "choice": "one of ``choices``",
    "choices": "a list of ``choices``",
    "flag": "bool",
    "text": "str",
    "codes": "a list of upper-case codes, typed comma-separated (``US,GB``)",
    "batches": "a list of batch names",
    "duration": "timedelta, typed ``45s``, ``30m``, ``12h`` or ``7d`` (command line only)",
}
#: Where a value lands in ``BatchSettings``: a field of its own, or a key of one of these dicts.
INTO = ("settings", "provider_options")


class OptionError(ValueError):
    """A value an option refuses; ``str()`` names the field as people read it (``extra budget: …``)."""

    def __init__(self, field: str, problem: str) -> None:
        self.field, self.problem = field, problem
        super().__init__(f"{field}: {problem}")


#: The largest count an option without its own maximum takes (within every integer column).
LARGEST_COUNT = 999_999_999


@dataclass(frozen=True)
class BatchOption:
    """One option of a batch, as every shell offers it."""

    #: The form's and the API's field (and the ``BatchSettings`` field or dict key unless ``key``).
    name: str
    kind: str
    help: str
    #: What applies when the option is not given (``None``: nothing, the option is off).
    default: Any = None
    minimum: Any = None
    maximum: Any = None
    #: ``(value, label)`` pairs for ``choice`` and ``choices``.
    choices: tuple[tuple[str, str], ...] = ()
    label: str = ""
    #: The command-line option: ``""`` derives it from ``name`` (``--gold-per-hit``); ``None``: not offered there.
    flag: str | None = ""
    metavar: str | None = None
    #: The command-line option may be given several times (always so for ``choices`` and ``batches``).
    repeat: bool = False
    #: Offered by the batch form (the page and the API); ``False``: command line only, for ``why``.
    on_form: bool = True
    why: str = ""
    into: str = "settings"
    #: Where the value is stored: the settings field, or the dict key (``a.b``: nested); ``""``: ``name``.
    key: str = ""
    #: A heading grouping options on the command line's --help.
    group: str = ""
    #: Reads a command-line value instead of the kind's reading (a compact syntax such as ``KIND:USD``).
    read_flag: Callable[[str], Any] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"option {self.name}: unknown kind {self.kind!r}")
        if self.into not in INTO:
            raise ValueError(f"option {self.name}: unknown destination {self.into!r}")

    @property
    def field(self) -> str:
        """The option as refusals name it: ``extra budget``, ``queries per hit``."""
        return self.name.replace("_", " ")

    @property
    def cli(self) -> str | None:
        return "--" + self.name.replace("_", "-") if self.flag == "" else self.flag

    @property
    def repeats(self) -> bool:
        return self.repeat or self.kind in ("choices", "batches")

    @property
    def store_key(self) -> str:
        return self.key or self.name

    @property
    def values(self) -> list[str]:
        return [value for value, _ in self.choices]

    def parse(self, value: Any) -> Any:
        """``value`` (typed text or a JSON value) as the option holds it, or :class:`OptionError`; nothing
        given (``None``, ``""``, ``[]`` for a list) is ``None``: the caller applies ``default``."""
        if value is None or value == "" or (value == [] and self.kind in ("choices", "codes", "batches")):
            return None
        try:
            return self._read(value)
        except (AmountError, NumberError) as exc:
            raise OptionError(self.field, exc.problem) from None

    def _read(self, value: Any) -> Any:
        kind = self.kind
        if kind == "whole":
            top = LARGEST_COUNT if self.maximum is None else self.maximum
            return parse_count(value, self.field, minimum=self.minimum or 0, maximum=top)
        if kind == "share":
            low = 0.0 if self.minimum is None else self.minimum
            high = 1.0 if self.maximum is None else self.maximum
            return parse_decimal(value, self.field, minimum=low, maximum=high)
        if kind == "money":
            return parse_amount(
                str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value,
                self.field,
                minimum=self.minimum or "0",
                maximum=self.maximum,
            )
        if kind == "flag":
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in ("true", "on", "1", "yes"):
                return True
            if text in ("false", "off", "0", "no"):
                return False
            raise OptionError(self.field, f"{value!r} is not true or false")
        if kind == "choice":
            if value not in self.values:
                raise OptionError(self.field, f"{value!r} is not one of {', '.join(self.values)}")
            return value
        if kind == "choices":
            items = _as_list(self, value)
            bad = [item for item in items if item not in self.values]
            if bad:
                raise OptionError(
                    self.field, f"unknown {self.field} {', '.join(map(repr, bad))}; use {', '.join(self.values)}"
                )
            return items or None
        if kind == "codes":
            items = value.split(",") if isinstance(value, str) else _as_list(self, value)
            codes = [str(item).strip().upper() for item in items if str(item).strip()]
            bad = [code for code in codes if not re.fullmatch(r"[A-Z]{2}", code)]
            if bad:
                raise OptionError(self.field, f"{', '.join(bad)}: use two-letter country codes, like US,GB")
            return codes or None
        if kind == "batches":
            return [str(item) for item in _as_list(self, value)] or None
        if kind == "duration":
            return value if isinstance(value, dt.timedelta) else read_duration(self.field, str(value))
        if not isinstance(value, str):
            raise OptionError(self.field, f"expected text, got {type(value).__name__}")
        return value

    def read_text(self, text: str) -> Any:
        """A command-line value (argparse's ``type=``): the option's own syntax, else :meth:`parse`."""
        return self.read_flag(text) if self.read_flag else self.parse(text)

    def default_text(self) -> str:
        """The default as a person would type it (``7d``, ``0.05``, ``3``), for --help; ``""``: none."""
        if self.default is None or self.kind == "flag":
            return ""
        if isinstance(self.default, dt.timedelta):
            return duration_text(self.default)
        return str(self.default)


def _as_list(option: BatchOption, value: Any) -> list:
    if isinstance(value, (list, tuple)):
        return list(value)
    raise OptionError(option.field, f"expected a list, got {type(value).__name__}")


_DURATION = re.compile(r"([0-9]{1,9})([smhd]?)")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def read_duration(field: str, text: str) -> dt.timedelta:
    """``90`` or ``90s``, ``30m``, ``12h``, ``7d`` as a timedelta, or :class:`OptionError` naming ``field``."""
    match = _DURATION.fullmatch(text.strip(" \t"))
    if not match:
        raise OptionError(field, f"not a duration: {text!r} (use e.g. 45s, 30m, 12h, 7d)")
    return dt.timedelta(seconds=int(match.group(1)) * _UNITS[match.group(2)])


def duration_text(value: dt.timedelta) -> str:
    """The shortest way to type ``value`` (``7d``, ``30m``, ``45s``)."""
    seconds = int(value.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


#: The largest reward per assignment (what ``Batch.reward`` holds: 8 digits, 2 decimals).
MAX_REWARD = "999999.99"
#: MTurk's limits on the durations a HIT type and a HIT accept (seconds).
MIN_LIFETIME = 30
MAX_LIFETIME = 365 * 24 * 3600
MAX_AUTO_APPROVAL_DELAY = 30 * 24 * 3600
QUALITY = "quality thresholds, applied at every sync_batch (shares in [0, 1])"


def _threshold(name: str, flag: str, help: str) -> BatchOption:
    return BatchOption(name, "share", help, flag=flag, metavar="SHARE", group=QUALITY)


def _duration(name: str, help: str, default: dt.timedelta, kept: str, **limits: Any) -> BatchOption:
    """A duration the command line sets and the form keeps at its default (``kept``: which)."""
    limits = {"minimum": MIN_LIFETIME, "maximum": MAX_LIFETIME} | limits
    return BatchOption(name, "duration", help, default=default, on_form=False, why=f"the form keeps {kept}", **limits)


#: What every platform takes (``provider`` is added with the registry's names as its choices).
COMMON_OPTIONS: tuple[BatchOption, ...] = (
    BatchOption(
        "assignments_per_query", "whole", "Workers per query.", default=3, minimum=1, maximum=50, flag="--assignments"
    ),
    BatchOption(
        "queries_per_hit",
        "whole",
        "Queries on one HIT page.",
        default=10,
        minimum=1,
        maximum=100,
        label="Queries per HIT",
    ),
    BatchOption("reward", "money", "USD per assignment.", default=Decimal("0.05"), minimum="0.01", maximum=MAX_REWARD),
    _duration("lifetime", "how long HITs are offered", dt.timedelta(days=7), "the default HIT lifetime (7 days)"),
    _duration("assignment_duration", "time a worker has for a HIT", dt.timedelta(minutes=30), "the default 30 minutes"),
    _duration(
        "auto_approval_delay",
        "a platform that approves by itself approves submitted work after this",
        dt.timedelta(days=3),
        "the default 3 days",
        minimum=0,
        maximum=MAX_AUTO_APPROVAL_DELAY,
        flag="--auto-approve",
    ),
    BatchOption("gold_per_hit", "whole", "Gold questions in every HIT.", default=0, minimum=0, maximum=20),
    BatchOption(
        "gold_feedback",
        "flag",
        "do not tell workers which gold questions they got wrong (only how many)",
        default=True,
        flag="--no-gold-feedback",
        on_form=False,
        why="the form keeps feedback on",
    ),
    BatchOption(
        "failed_gold_answers",
        "choice",
        "A HIT that fails its gold check loses its pay; its other answers are discarded (default) or kept.",
        default="discard",
        choices=(("discard", "discard its other answers"), ("keep", "keep its other answers")),
        label="Failed gold check",
    ),
    BatchOption(
        "seed",
        "whole",
        "seed of the query shuffle",
        default=0,
        maximum=2**31 - 1,
        on_form=False,
        why="the form uses seed 0",
    ),
    BatchOption(
        "training_pass_fraction",
        "share",
        "share of the training queries to get right to be given HITs",
        default=0.8,
        flag="--training-pass",
        metavar="SHARE",
        on_form=False,
        why="the form has no training file yet",
    ),
    _threshold("warn_gold_accuracy", "--warn-gold", "Flag workers below this share of gold answers right."),
    _threshold("block_gold_accuracy", "--block-gold", "Block workers below this share (applied at every sync)."),
    _threshold("warn_agreement", "--warn-agreement", "Flag workers agreeing with the majority less often."),
    _threshold("block_agreement", "--block-agreement", "Block workers agreeing with the majority less often."),
    BatchOption(
        "min_answers_judged",
        "whole",
        "Answers a worker needs before a threshold applies.",
        default=10,
        minimum=1,
        maximum=1_000_000,
        flag="--min-answers",
        group=QUALITY,
    ),
    BatchOption(
        "extra_budget",
        "money",
        "USD re-offered places and escalations may add to the estimate (empty: no limit).",
        maximum=MAX_REWARD,
        flag="--budget",
    ),
)


def options_by_name(options: tuple[BatchOption, ...]) -> dict[str, BatchOption]:
    return {option.name: option for option in options}
