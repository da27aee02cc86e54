"""Many virtual annotators at once against a running site (one thread each, ``benchmark_load``), and the
figures of what they measured. Pure module (standard library only, no Django).
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from tests.support.virtual_annotator import SiteError, VirtualAnnotator

#: Names of everything a load benchmark creates (batches, users), so it can clean up after itself.
PREFIX = "load-"


STEPS = ("login", "next", "submit")
#: Seconds a virtual annotator waits for an answer before counting the step as an error.
REQUEST_TIMEOUT = 30.0


@dataclass
class LoadResult:
    """Everything the virtual annotators saw (latencies in seconds)."""

    seconds: float = 0.0
    latencies: dict[str, list[float]] = field(default_factory=lambda: {s: [] for s in STEPS})
    errors: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STEPS, 0))
    accepted: int = 0
    refused: int = 0
    finished: int = 0  # annotators who ran out of HITs before the time was up
    error_samples: list[str] = field(default_factory=list)

    @property
    def requests(self) -> int:
        return sum(len(v) for v in self.latencies.values())

    @property
    def error_rate(self) -> float:
        return sum(self.errors.values()) / self.requests if self.requests else 0.0


def _annotator_loop(client: VirtualAnnotator, deadline: float, result: LoadResult, lock: threading.Lock) -> None:
    def failed(exc: SiteError) -> None:
        with lock:
            result.errors[exc.step] += 1
            if len(result.error_samples) < 10:
                result.error_samples.append(str(exc))

    try:
        client.login()
    except SiteError as exc:
        failed(exc)
        return
    while time.monotonic() < deadline:
        try:
            hit = client.next_hit()
            if hit is None:
                with lock:
                    result.finished += 1
                return
            accepted = client.submit(hit)
        except SiteError as exc:
            failed(exc)
            continue
        with lock:
            if accepted:
                result.accepted += 1
            else:
                result.refused += 1
    client.close()


def run_annotators(
    base_url: str,
    accounts: Sequence[tuple[str, str]],
    duration: float,
    *,
    report: Callable[[float, LoadResult], None] | None = None,
    report_every: float = 10.0,
) -> LoadResult:
    """Run one virtual annotator per ``(username, password)`` for ``duration`` seconds, or until nothing is left;
    ``report(elapsed, result)`` is called every ``report_every`` seconds while they run."""
    result = LoadResult()
    lock = threading.Lock()
    clients = [
        VirtualAnnotator(base_url, user, password, timeout=REQUEST_TIMEOUT, seed=i)
        for i, (user, password) in enumerate(accounts)
    ]
    started = time.monotonic()
    deadline = started + duration
    threads = [threading.Thread(target=_annotator_loop, args=(c, deadline, result, lock), daemon=True) for c in clients]
    for thread in threads:
        thread.start()
    next_report = started + report_every
    stop_waiting = deadline + REQUEST_TIMEOUT + 5  # the last requests finish, or time out
    while time.monotonic() < stop_waiting:
        alive = [t for t in threads if t.is_alive()]
        if not alive:
            break
        alive[0].join(timeout=max(0.05, min(next_report, stop_waiting) - time.monotonic()))
        if report is not None and time.monotonic() >= next_report:
            report(time.monotonic() - started, result)
            next_report += report_every
    result.seconds = time.monotonic() - started
    for client in clients:
        for step in STEPS:
            result.latencies[step].extend(client.timings.steps[step])
    return result


def percentiles(values: Sequence[float]) -> tuple[float, float, float]:
    """p50, p95, p99 (inclusive method); the one value for a single value, NaN for none."""
    if not values:
        return (float("nan"),) * 3
    if len(values) == 1:
        return (values[0],) * 3
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return cuts[49], cuts[94], cuts[98]


def step_rows(result: LoadResult, steps: Sequence[str] = STEPS) -> list[dict[str, object]]:
    """One row per step: requests, errors, p50/p95/p99 in milliseconds.

    ``result`` is anything with ``latencies`` (step -> seconds) and ``errors`` (step -> count):
    a :class:`LoadResult`, or the launch burst's tally with its own ``steps``.
    """
    rows = []
    for step in steps:
        p50, p95, p99 = percentiles(result.latencies[step])
        rows.append(
            {
                "step": step,
                "count": len(result.latencies[step]),
                "errors": result.errors[step],
                "p50 ms": p50 * 1000,
                "p95 ms": p95 * 1000,
                "p99 ms": p99 * 1000,
            }
        )
    return rows


def format_table(rows: Sequence[dict[str, object]]) -> str:
    """Rows of equal keys as an aligned plain-text table (numbers right-aligned, floats to 1 decimal)."""
    if not rows:
        return ""
    headers = list(rows[0])

    def cell(value: object) -> str:
        return f"{value:,.1f}" if isinstance(value, float) else f"{value:,}" if isinstance(value, int) else str(value)

    cells = [[cell(row[h]) for h in headers] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.rjust(w) if i else h.ljust(w) for i, (h, w) in enumerate(zip(headers, widths, strict=True)))]
    for r in cells:
        lines.append("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))))
    return "\n".join(lines)


# --- benchmark_cycle: the baseline and the thing measured, interleaved ------------------------
def interleaved_schedule(sizes: Sequence[int], templates: int, cycles: int, block: int) -> list[tuple[int, int, int]]:
    """The blocks ``benchmark_cycle`` runs, in order: ``(size, template pages, HIT cycles)``.

    Each size gets ``templates`` template pages and ``cycles`` HIT cycles in blocks of about
    ``block`` cycles, each block's template pages just before its cycles; the sizes take turns
    block by block, in the order ABBA (forward, then backward), so neither size is always the
    one measured first. On a shared machine whose load changes every few seconds, a change
    then falls on a size's baseline and on its cycles alike, and on every size alike.
    """
    blocks = max(1, -(-cycles // max(1, block)))
    # each total in whole shares that differ by at most one (the larger first)
    template_shares, cycle_shares = (
        [n // blocks + (i < n % blocks) for i in range(blocks)] for n in (templates, cycles)
    )
    schedule = []
    for i in range(blocks):
        for size in sizes if i % 2 == 0 else reversed(sizes):
            schedule.append((size, template_shares[i], cycle_shares[i]))
    return schedule


@dataclass(frozen=True)
class Multiple:
    """CPU of what was measured over the template page's, from blocks run one after the other."""

    #: Mean CPU of the template page and of the thing measured over all blocks (seconds).
    template: float
    measured: float
    #: The multiple of each block that has both (its own template pages against its own cycles).
    per_block: tuple[float, ...]

    @property
    def value(self) -> float:
        """The multiple from the interleaved totals: mean over mean, every block weighted by its requests."""
        return self.measured / self.template

    def spread(self) -> tuple[float, float, float]:
        """Lower quartile, median and upper quartile of the per-block multiples (the noise between blocks)."""
        if len(self.per_block) < 2:
            return (self.value,) * 3
        low, mid, high = statistics.quantiles(self.per_block, n=4, method="inclusive")
        return low, mid, high


def interleaved_multiple(blocks: Sequence[tuple[float, int, float, int]]) -> Multiple:
    """The :class:`Multiple` of blocks ``(template CPU, template pages, measured CPU, measured count)``.

    Totals, not a mean of ratios: a block with few requests weighs little, and one noisy
    template page (the smaller figure) cannot blow up a block's ratio into the result.
    """
    template_cpu = sum(b[0] for b in blocks)
    template_n = sum(b[1] for b in blocks)
    measured_cpu = sum(b[2] for b in blocks)
    measured_n = sum(b[3] for b in blocks)
    if not template_n or not measured_n or template_cpu <= 0:
        raise ValueError("no template page or nothing measured")
    per_block = tuple((b[2] / b[3]) / (b[0] / b[1]) for b in blocks if b[1] and b[3] and b[0] > 0)
    return Multiple(template_cpu / template_n, measured_cpu / measured_n, per_block)
