"""The per-query CSV as a string, for a test's expectation (the product writes it to a file a row at a time)."""

import io

from metrics.formatting import write_per_query_csv


def per_query_csv(per_query, summary=None, policy: str = "") -> str:
    """:func:`metrics.formatting.write_per_query_csv` into a string."""
    out = io.StringIO()
    write_per_query_csv(out, per_query, summary, policy)
    return out.getvalue()
