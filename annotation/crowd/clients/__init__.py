"""Clients of the crowd platforms' APIs, pure (no Django): MTurk's (boto3, and its question and answer
XML) and Prolific's (through :mod:`core.http`). The providers (:mod:`annotation.crowd.providers`)
use them; tests and benchmarks point them at the compatible servers of :mod:`benchmarks.fakes`.
"""
