"""The publishing tests' worlds: the annotation tests' (a query set, researchers, annotators, batches)
and the metrics tests' (a collection, runs and a batch of in-house answers), as they were beside them;
and :func:`figures_once`, which draws each distinct set of a bundle's figures once per session."""

from __future__ import annotations

import hashlib

import pandas as pd
import pytest

from tests.annotation.conftest import *  # noqa: F403 (its fixtures: its __all__)
from tests.metrics.conftest import _kept_batch, _kept_world, _no_screenshots_unless_browser, batch, world  # noqa: F401

#: The figures drawn this session, by :func:`_frame_digest` of what they were drawn from.
_DRAWN: dict[tuple, list] = {}


def _frame_digest(frame: pd.DataFrame) -> str:
    """A digest of every value, column name, dtype and index label of ``frame``: equal digests, equal frames."""
    digest = hashlib.sha256(repr((list(frame.columns), [str(t) for t in frame.dtypes])).encode())
    digest.update(pd.util.hash_pandas_object(frame, index=True).to_numpy().tobytes())
    return digest.hexdigest()


@pytest.fixture
def figures_once():
    """The bundle's figures (``publishing.services.paper._figures``, a function of the report's summary
    and per-query frames and the tables' cutoff only, not of the template or the report's row) drawn by
    the real code once per distinct input in the session, then the same bytes handed out again: a test
    that writes the bundle in three templates, or twice over, or a module that builds the same report
    in several tests (``queries="q", runs="a,c", cutoffs="1,2"`` is built in three), draws its figures
    once. Every PDF, caption and description handed out is the real code's for that input, so a test
    reading them (fonts, words off the page, captions) reads what the bundle holds; a test comparing
    the bytes of two builds (reproducibility) must not use it: it would compare the memo with itself."""
    from publishing.services import paper

    draw = paper._figures

    def once(report, summary, per_query, cutoff):
        # The report's own choices a figure could one day follow (its runs' order, its baseline) are in
        # the key too; its name and primary key are not (the same study built under another name shares).
        baseline = report.baseline.name if report.baseline_id else None
        key = (_frame_digest(summary), _frame_digest(per_query), cutoff, tuple(report.run_order or ()), baseline)
        if key not in _DRAWN:
            _DRAWN[key] = draw(report, summary, per_query, cutoff)
        return list(_DRAWN[key])

    with pytest.MonkeyPatch.context() as patch:  # its own: a test's ``monkeypatch.undo()`` leaves it on
        patch.setattr(paper, "_figures", once)
        yield _DRAWN
