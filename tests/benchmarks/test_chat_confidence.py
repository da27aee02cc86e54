"""The chat-confidence benchmark runs the labeller's own code and measures what it says (small size)."""

from benchmarks.chat_confidence import main


def test_the_benchmark_measures_levels_calls_and_kept_shares(capsys):
    rows = {row["configuration"]: row for row in main(["--queries", "300", "--redraws", "1", "--json"])}
    capsys.readouterr()
    five, default = rows["votes, 5 (the former default)"], rows["votes, 3 then up to 16 (default)"]
    logprobs = rows["log-probabilities, 3"]
    assert five["levels"] <= 4 and five["calls_per_query"] == 1 and five["answers_per_query"] == 5
    assert default["levels"] > five["levels"] and default["answers_per_query"] == 16 and default["calls_per_query"] == 2
    assert default == {**rows["votes, 16"], "configuration": default["configuration"], "calls_per_query": 2.0}
    assert logprobs["levels"] == 300 and logprobs["calls_per_query"] == 1
    assert logprobs["kept_0.95"] == 1.0  # the simulated model lists its own probabilities: the oracle's ranking
    budget = rows["votes, 3 then up to 16, budget 8"]
    assert budget["answers_per_query"] <= 8
