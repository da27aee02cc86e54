"""The run files' formats and orders, apart from :mod:`genderbias.files.runs` (which needs polars).

Commands offer them as choices; importing them must not cost a command's ``--help`` the
0.4 s of polars and numpy (tests/core/test_startup.py).
"""

__all__ = ["RUN_FORMATS", "RUN_ORDERS"]

#: ``score``: documents ordered by score (ties as ``trec_eval`` breaks them); ``file``: as listed.
RUN_ORDERS = ("score", "file")
#: ``trec``: ``qid Q0 docid rank score tag``; ``msmarco``: ``qid docid rank`` (MS MARCO's
#: run format, no score: documents are ordered by rank); ``auto``: decided by the column
#: count of the first non-blank line.
RUN_FORMATS = ("auto", "trec", "msmarco")
