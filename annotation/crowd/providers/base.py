"""The interface every crowd provider implements, and the registry that finds one by name.

The services speak to :class:`CrowdProvider`, so the batch life cycle is written once; a new platform
is a folder ``platforms/<name>/`` with a ``provider.py``. A provider only talks to the outside world:
the services record what it returns, in an order that makes re-running after an interruption safe.
"""

from __future__ import annotations

import datetime as dt
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from annotation.crowd.pay_rate import hourly_rate, median_or_none, seconds_taken
from annotation.crowd.providers.options import COMMON_OPTIONS, BatchOption
from annotation.crowd.providers.registry import PLATFORMS, REGISTRY
from annotation.crowd.providers.registry import platform_label as platform_label
from core.lazy_registry import LazyRegistry

if TYPE_CHECKING:
    from decimal import Decimal

    from annotation.models import Assignment, Batch, Hit


@dataclass(frozen=True)
class RemoteAssignment:
    """An assignment as the provider reports it."""

    assignment_id: str
    worker_id: str
    status: str  # "submitted", "approved" or "rejected"
    raw_answer: str
    #: ``None`` when ``raw_answer`` could not be read at all (every judgment is then invalid).
    answers: dict[str, str] | None = field(default_factory=dict)
    submitted_at: dt.datetime | None = None
    accepted_at: dt.datetime | None = None


def extra_count(extra_per_hit: Mapping[str, int] | int) -> int:
    """How many extra assignments ``extra_per_hit`` asks for: a map of HIT ids to counts, or a total;
    a negative count is refused (``ValueError`` naming the HITs)."""
    if isinstance(extra_per_hit, Mapping):
        negative = sorted(str(hit) for hit, extra in extra_per_hit.items() if extra < 0)
        if negative:
            raise ValueError(f"negative extra assignments for HIT(s): {', '.join(negative)}")
        return sum(int(extra) for extra in extra_per_hit.values())
    if int(extra_per_hit) < 0:
        raise ValueError("extra assignments cannot be negative")
    return int(extra_per_hit)


class CrowdProvider(ABC):
    """What the services need from a crowd platform."""

    name: str = ""
    #: How pages and the API's choices name the platform.
    label: str = ""
    #: The short name help texts use ("MTurk only: ...").
    short_label: str = ""
    #: The batch options the platform takes (:mod:`.options`): the shared ones here, a provider adds
    #: its own. The form, the API, the command and ``BatchSettings`` follow them.
    batch_options: tuple[BatchOption, ...] = COMMON_OPTIONS
    #: Assignments one participant may take in a batch: ``None``, one per HIT; ``1`` where a batch is
    #: one study a participant submits once (Prolific).
    assignments_per_participant: int | None = None

    @classmethod
    def own_options(cls) -> tuple[BatchOption, ...]:
        """The options only this platform takes (not the shared ones)."""
        return tuple(option for option in cls.batch_options if option not in COMMON_OPTIONS)

    @classmethod
    def new_batch_options(cls, options: dict[str, Any]) -> dict[str, Any]:
        """``options`` plus what the platform makes itself for each new batch (a completion code)."""
        return options

    @classmethod
    def check_settings(cls, batch_settings: Any) -> None:
        """Refuse ``BatchSettings`` this platform would refuse (a ``ServiceError``), beyond the options' own ranges."""
        return None

    # -- prices (annotation.crowd.costs asks the provider) ------------------------------------
    #: False where the platform takes no fee (in-house).
    takes_fees: bool = True
    #: How bonuses are charged, each charge with its own fee: ``"each"`` on its own (MTurk), a
    #: ``"bulk"`` at once (Prolific), or all ``"at_once"`` (no fee to round).
    bonus_charges: str = "each"
    #: True where the batch page previews and pays a bonus rule (Prolific's bulk bonuses).
    pays_bonus_rules: bool = False

    @classmethod
    def work_cost(
        cls,
        reward: Decimal,
        count: int,
        *,
        assignments_per_hit: int,
        options: Mapping[str, Any] | None = None,
        account_fee_rate: Decimal | None = None,
    ) -> Any:
        """What ``count`` assignments at ``reward`` cost on this platform, fee included (a ``Cost``);
        the arguments as :mod:`annotation.crowd.costs` names them."""
        raise ValueError(f"no prices known for provider {cls.name!r}")

    @classmethod
    def bonus_fees(cls, paid: list[Decimal], *, account_fee_rate: Decimal | None = None) -> tuple[Decimal, Decimal]:
        """The platform's fee rate and fee on paying ``paid`` (positive, whole cents) as one charge."""
        raise ValueError(f"no prices known for provider {cls.name!r}")

    @classmethod
    def extension_limit(cls, assignments_per_hit: int) -> int | None:
        """The most assignments a HIT created with ``assignments_per_hit`` may be extended to (``None``: no limit)."""
        return None

    @classmethod
    def extension_refusal(cls, assignments_per_hit: int, cap: int) -> str | None:
        """Why escalating HITs of ``assignments_per_hit`` up to ``cap`` assignments is refused here, or ``None``."""
        limit = cls.extension_limit(assignments_per_hit)
        if limit is None or cap <= limit:
            return None
        return (
            f"{cls.short_label or cls.name} cannot extend a HIT created with {assignments_per_hit} assignments "
            f"(fewer than {limit + 1}) to {cap}: at most {limit}"
        )

    @classmethod
    def extra_assignments_cost(
        cls,
        reward: Decimal,
        extra_per_hit: Mapping[str, int] | int,
        assignments_per_hit: int,
        *,
        options: Mapping[str, Any] | None = None,
        account_fee_rate: Decimal | None = None,
    ) -> Any:
        """What extra assignments added to existing HITs cost (a ``Cost``); ``ValueError`` for an extension
        the platform refuses."""
        return cls.work_cost(
            reward,
            extra_count(extra_per_hit),
            assignments_per_hit=1,
            options=options,
            account_fee_rate=account_fee_rate,
        )

    @classmethod
    def comparison(cls, reward: Decimal, assignments_per_query: int, hits: int) -> tuple[str, Any] | None:
        """A price shown beside a batch's own for comparison, as ``(where, Cost)``, or ``None``."""
        return None

    @classmethod
    def pay_figures(cls, batch: Batch, done: Any) -> dict[str, Any]:
        """What the platform's records say of a batch's pay, for the checklists (``median_seconds``,
        ``median_hourly_rate``, ``rate_source``, ``estimated_minutes``): by default from the
        accept-to-submit times of the assignments ``done``; nothing where it pays no one."""
        if not cls.takes_fees:
            return {}
        times = [seconds_taken(a, b) for a, b in done.values_list("accepted_at", "submitted_at")]
        timed = sum(t is not None for t in times)
        return {
            "median_seconds": median_or_none(times),
            "median_hourly_rate": median_or_none(hourly_rate(batch.reward, t) for t in times),
            "rate_source": f"from the accept-to-submit times of {timed} assignment{'s' if timed != 1 else ''}",
        }

    #: True where a worker takes the batch's training step on this site before the first HIT.
    trains_workers: bool = False
    #: True where a rejected assignment's place is offered again by adding an assignment to its HIT;
    #: False where the platform reopens the place itself or takes no new worker for it.
    reoffers_rejected: bool = False
    #: The ``Batch`` field the provider options are stored in.
    options_field: str = "provider_options"

    @classmethod
    def options_of(cls, batch: Batch) -> dict[str, Any]:
        """The batch's provider options, as stored (:attr:`options_field`)."""
        return dict(getattr(batch, cls.options_field, None) or {})

    #: True when answers arrive through this site (the local provider) rather than by polling.
    answers_on_site: bool = False
    #: True when a submission with a query unanswered (or not answered with a category) is rejected at
    #: review: on a paid platform it would otherwise be approved and paid.
    rejects_invalid: bool = True

    def form_action(self) -> str:
        """Where the HIT page posts its answers when rendered for this provider (``""``: our own view)."""
        return ""

    @abstractmethod
    def prepare(self, batch: Batch) -> str:
        """Make the batch ready to receive HITs (e.g. create the MTurk HIT type); returns its id or ``""``."""

    def launch(self, batch: Batch) -> None:
        """Open the batch to workers once all its HITs are published (e.g. publish the Prolific study)."""
        return None

    @abstractmethod
    def publish_hit(self, hit: Hit, question_html: str) -> str:
        """Create the HIT and return the provider's id for it; must be idempotent on ``hit.unique_token``."""

    #: How long the provider remembers ``unique_token``: past it, a retry could duplicate a HIT.
    token_memory: dt.timedelta | None = None

    def find_hit(self, hit: Hit) -> str | None:
        """The provider's id of ``hit`` if it exists there (looked up, not created), else ``None``."""
        return None

    @abstractmethod
    def fetch_assignments(self, hit: Hit) -> Iterator[RemoteAssignment]:
        """Every submitted, approved or rejected assignment of the HIT."""

    @abstractmethod
    def approve(self, assignment: Assignment, feedback: str = "") -> bool:
        """Approve; ``False`` when it already was."""

    @abstractmethod
    def reject(self, assignment: Assignment, feedback: str) -> bool:
        """Reject with feedback to the worker; ``False`` when it already was."""

    @abstractmethod
    def add_assignments(self, hit: Hit, count: int, unique_token: str) -> None:
        """Ask ``count`` more workers to do the HIT (idempotent on ``unique_token``)."""

    @abstractmethod
    def expire(self, hit: Hit) -> None:
        """Stop the HIT from being offered to more workers."""

    #: True when :meth:`block_worker` asks the platform to block (a call worth recording once).
    blocks_remotely: bool = False

    def block_worker(self, external_id: str, reason: str) -> None:
        """Keep the worker from this requester's work on the platform; here ``Worker.blocked`` does it."""
        return None


_REGISTRY: LazyRegistry[CrowdProvider] = REGISTRY
#: Class decorator: make a provider available as ``get_provider(name)``.
register: Callable[[str], Callable[[type[CrowdProvider]], type[CrowdProvider]]] = _REGISTRY.register
provider_class: Callable[[str], type[CrowdProvider]] = _REGISTRY.get_class
provider_names: Callable[[], list[str]] = _REGISTRY.names


def get_provider(name: str, **kwargs: Any) -> CrowdProvider:
    """A new provider object for ``Batch.provider`` (``kwargs`` go to its constructor, e.g. a test client)."""
    return provider_class(name)(**kwargs)


def provider_option() -> BatchOption:
    """The ``provider`` option: its choices are the registry's names, each with its provider's label."""
    return BatchOption(
        "provider",
        "choice",
        "The crowd platform: who does the work and what it costs.",
        default="local",
        choices=tuple((name, platform_label(name)) for name in provider_names()),
    )


def batch_options(name: str) -> tuple[BatchOption, ...]:
    """Every option a batch on provider ``name`` takes, ``provider`` first."""
    return (provider_option(), *provider_class(name).batch_options)


def all_batch_options() -> dict[str, tuple[BatchOption, str | None]]:
    """Every option of every registered provider, by name, with the provider that alone takes it (or None: all do)."""
    options: dict[str, tuple[BatchOption, str | None]] = {"provider": (provider_option(), None)}
    options.update({option.name: (option, None) for option in COMMON_OPTIONS})
    for name in provider_names():
        for option in provider_class(name).own_options():
            options.setdefault(option.name, (option, name))
    return options


def platform_plug_ins() -> tuple[str, ...]:
    """The modules each platform plugs into a batch's life cycle (:mod:`annotation.crowd.services.hooks`):
    its package's ``PLUG_INS``, in :data:`PLATFORMS`' order; reads only the packages' ``__init__``."""
    import importlib

    return tuple(
        module for folder in PLATFORMS.values() for module in getattr(importlib.import_module(folder), "PLUG_INS", ())
    )
