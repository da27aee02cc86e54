"""Benchmarks, load tests and the compatible test servers of the outside world (MTurk, Prolific,
OpenAI-style chat completions).

Not product code: no module of ``core``, ``pooling``, ``annotation`` or ``metrics`` imports this
package (``tests/test_architecture.py``). It is a Django app only so that its commands
(``benchmark_cycle``, ``benchmark_load``, ``benchmark_pooling``, ``benchmark_scan``,
``benchmark_metrics``) keep their names; docs/benchmarks.md records what they measure.
"""
