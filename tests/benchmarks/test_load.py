"""The load benchmark's pure arithmetic (benchmarks/site_load.py): percentiles and the table it prints."""

import math

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from benchmarks.site_load import (
    LoadResult,
    format_table,
    interleaved_multiple,
    interleaved_schedule,
    percentiles,
    split_evenly,
    step_rows,
)


def test_percentiles_inclusive_on_one_to_101():
    # 1..101 inclusive: the k-th percentile is exactly 1 + k.
    assert percentiles([float(v) for v in range(1, 102)]) == (51.0, 96.0, 100.0)


def test_percentiles_single_value_and_none():
    assert percentiles([0.25]) == (0.25, 0.25, 0.25)
    assert all(math.isnan(v) for v in percentiles([]))


def test_step_rows_and_error_rate():
    result = LoadResult()
    result.latencies["login"] = [0.1, 0.3]
    result.latencies["next"] = [0.2]
    result.errors["submit"] = 1
    result.latencies["submit"] = [0.5]
    rows = {row["step"]: row for row in step_rows(result)}
    assert rows["login"]["count"] == 2
    assert rows["login"]["p50 ms"] == pytest.approx(200.0)
    assert rows["submit"]["errors"] == 1
    assert result.requests == 4
    assert result.error_rate == 0.25


def test_format_table_aligns_columns():
    text = format_table(
        [{"step": "login", "count": 1200, "p50 ms": 3.14159}, {"step": "next", "count": 5, "p50 ms": 10.0}]
    )
    assert text.splitlines() == [
        "step   count  p50 ms",
        "login  1,200     3.1",
        "next       5    10.0",
    ]


def test_split_evenly_gives_shares_that_differ_by_at_most_one():
    assert split_evenly(10, 4) == [3, 3, 2, 2]
    assert sum(split_evenly(100, 20)) == 100
    assert split_evenly(2, 3) == [1, 1, 0]


def test_interleaved_schedule_alternates_sizes_abba_and_spreads_every_request():
    schedule = interleaved_schedule([100, 10000], templates=10, cycles=9, block=3)
    assert [size for size, _, _ in schedule] == [100, 10000, 10000, 100, 100, 10000]
    for size in (100, 10000):
        assert sum(t for s, t, _ in schedule if s == size) == 10
        assert sum(c for s, _, c in schedule if s == size) == 9
    assert all(cycles == 3 for _, _, cycles in schedule)


def test_interleaved_multiple_is_a_ratio_of_totals_and_a_load_change_hits_both():
    # The second block ran on a machine twice as slow: the baseline and the cycles both doubled.
    blocks = [(5 * 0.004, 5, 3 * 0.024, 3), (5 * 0.008, 5, 3 * 0.048, 3)]
    multiple = interleaved_multiple(blocks)
    assert multiple.value == pytest.approx(6.0)
    assert multiple.per_block == pytest.approx((6.0, 6.0))
    assert multiple.spread() == pytest.approx((6.0, 6.0, 6.0))
    with pytest.raises(ValueError):
        interleaved_multiple([(0.0, 0, 0.1, 1)])


@pytest.mark.django_db
def test_benchmark_load_refuses_a_database_with_real_batches(local_batch):
    with pytest.raises(CommandError, match="throw-away database"):
        call_command("benchmark_load", "--annotators", "1", "--duration", "1")


@pytest.mark.django_db
def test_benchmark_load_refuses_non_positive_options():
    with pytest.raises(CommandError, match="--annotators must be positive"):
        call_command("benchmark_load", "--annotators", "0")


@pytest.mark.parametrize("count", [1, 40])  # 40: long enough to be compressed
def test_newest_message_level_reads_djangos_messages_cookie(count):
    from django.contrib.messages import constants
    from django.contrib.messages.storage.base import Message
    from django.contrib.messages.storage.cookie import CookieStorage
    from django.test import RequestFactory

    from benchmarks.virtual_annotator import newest_message_level

    messages = [Message(constants.SUCCESS, "Thank you: your answers were recorded.")] * count
    messages.append(Message(constants.INFO, "You already submitted that HIT."))
    cookie = CookieStorage(RequestFactory().get("/"))._encode(messages)  # what the site sets
    if count > 1:
        assert cookie.startswith(".")  # the compressed form is read too
    assert newest_message_level(cookie) == constants.INFO
    assert newest_message_level("") is None
    assert newest_message_level("not-base64!:sig") is None


@pytest.mark.django_db
def test_benchmark_load_burst_refuses_non_positive_options():
    with pytest.raises(CommandError):
        call_command("benchmark_load", "--burst", "-1", "--over", "-1")
