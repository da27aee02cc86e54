"""Benchmarks and load tests: not product code, which never imports them (``tests/test_architecture.py``).
A Django app only so that its commands keep their names; docs/benchmarks.md records what they measure."""
