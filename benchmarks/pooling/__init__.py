"""Benchmark of pooling: this project's engine against the reference notebooks' approach.

Run as ``python manage.py benchmark_pooling``; every measurement runs in a fresh process
(:mod:`.__main__`) so that its peak memory (``VmHWM``) is its own.
"""
