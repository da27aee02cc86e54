"""The library as a user calls it: measures parsed from strings, ``calc_aggregate`` and ``iter_calc``
over a run and texts, and the measures bound to texts for ir_measures and PyTerrier (docs/library.md)."""

__all__ = []
