"""The benchmark commands run on tiny data and check that both approaches agree."""

from io import StringIO

import pytest
from django.core.management import call_command

pytestmark = pytest.mark.slow  # every test runs a benchmark command end to end


def test_benchmark_pooling_engine_and_naive_give_the_same_pool(tmp_path):
    out = StringIO()
    call_command(
        "benchmark_pooling",
        passages="3000",
        naive_up_to=3000,
        queries=200,
        runs=2,
        depth=20,
        pool_depth=5,  # 4 lists x 5 of 200 queries: the pool depends on every RaB's order
        workdir=str(tmp_path),
        stdout=out,
    )
    text = out.getvalue()
    assert "same pool: True" in text
    startup = [line for line in text.splitlines() if "start-up" in line]
    assert startup and "manage.py import_queries on a 10-line file" in startup[0]
    assert "first pool in one command (pool given the files)" in text
    # Where pool's work goes: every step of build_pool, each with its CPU and wall seconds.
    phases = text.split("where pool's work goes", 1)[1].split("first pool in one command", 1)[0]
    for step in ("django.setup()", "top rankings", "counts read", "RaB", "pool stored"):
        assert step in phases
    assert float(startup[0].split("start-up")[1].split("s")[0]) > 0
    pooled = [line for line in text.splitlines() if line.startswith("| 3,000 | pool |")]
    assert pooled and 5 < int(pooled[0].split("|")[6].replace(",", "")) <= 20
    # As the README types it: one import_run given both run files, each command a process whose
    # CPU time and peak memory are read; same pool as naive's.
    typed = [line for line in text.splitlines() if "as typed (a process per command" in line]
    assert typed and "import_run " in typed[0] and typed[0].count(" MB)") == 5
    commands = [line for line in text.splitlines() if "as commands" in line and "faster than naive" in line]
    assert commands and "(same pool: True)" in commands[0] and "in CPU" in commands[0]
    # The same words as a file: the pool the built-in list gives.
    from_file = [line for line in text.splitlines() if "pool --wordlist (the same 64 words as a file)" in line]
    assert from_file and "same pool: True" in from_file[0]


def test_benchmark_metrics_approaches_agree():
    out = StringIO()
    call_command("benchmark_metrics", queries=40, docs=50, runs=2, collection=2000, stdout=out)
    text = out.getvalue()
    assert "identical in all three modes: True" in text
    assert "the notebook's algorithm: largest difference" in text
