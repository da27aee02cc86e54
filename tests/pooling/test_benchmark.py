"""The benchmark commands run on tiny data and check that both approaches agree."""

from io import StringIO

from django.core.management import call_command


def test_benchmark_pooling_engine_and_naive_give_the_same_pool(tmp_path):
    out = StringIO()
    call_command(
        "benchmark_pooling",
        passages="3000",
        naive_up_to=3000,
        queries=60,
        runs=2,
        depth=20,
        workdir=str(tmp_path),
        stdout=out,
    )
    text = out.getvalue()
    assert "same pool: True" in text
    assert "| 3,000 | pool |" in text and "| 3,000 | naive |" in text


def test_benchmark_metrics_approaches_agree():
    out = StringIO()
    call_command("benchmark_metrics", queries=40, docs=50, runs=2, collection=2000, stdout=out)
    text = out.getvalue()
    assert "identical in all three modes: True" in text
    assert "the notebook's algorithm: largest difference" in text
