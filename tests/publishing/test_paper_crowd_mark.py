"""The crowd check's warning travels with the label-corrected figures into the paper's labels table (issue 67):
the rows the bundle hands over carry the one decision (:func:`core.figure_notes.figure_notes`), and the
table marks each such corrected value and says why; a crowd the check trusts, or a figure without a
label-corrected interval, is not marked."""

import pandas as pd

from core.figure_notes import CROWD_WARNING
from publishing.latex import escape
from publishing.latex_tables import CROWD_MARK, uncertainty_tex
from publishing.services.records import labels_rows

ROW = {
    "run": "a", "metric": "RaB", "variant": "tf", "cutoff": 10, "value": 0.1, "queries": 20, "ci_low": 0.0,
    "ci_high": 0.2, "p_value": None, "tie_low": None, "tie_high": None, "corrected": 0.12, "combined_low": -0.05,
    "combined_high": 0.3, "label_share": 0.4,
}  # fmt: skip


def test_a_warned_crowd_marks_the_corrected_values_and_says_why():
    summary = pd.DataFrame([ROW, ROW | {"run": "b", "combined_low": None, "combined_high": None}])
    warned = labels_rows(summary, 10, {"warning": True, "reasons": ["misfit"]})
    assert [row["crowd_warning"] for row in warned] == [True, False]  # no corrected interval: nothing to warn of
    tex = uncertainty_tex(warned, 10, None)
    assert tex.count(CROWD_MARK) == 2  # beside a's corrected value, and in the note
    assert escape(CROWD_WARNING) in tex
    trusted = uncertainty_tex(labels_rows(summary, 10, {"warning": False}), 10, None)
    assert CROWD_MARK not in trusted and escape(CROWD_WARNING) not in trusted
