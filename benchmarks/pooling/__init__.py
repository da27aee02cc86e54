"""Benchmark of pooling: this project's engine against the reference notebooks' approach.

Run as ``python manage.py benchmark_pooling``; every measurement runs in a fresh
process (``python -m benchmarks.pooling naive|first|import|pool ...``, :mod:`.__main__`)
so that its peak memory (``VmHWM``) is its own.

- :mod:`tests.support.naive_pool` -- pure (no Django): the reference notebooks' pooling (the tests' oracle too);
- :mod:`.__main__` -- one measurement, timed, in its own process;
- :mod:`.engine` -- this project's import and pool (Django, set up by each step).
"""
