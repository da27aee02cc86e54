"""Text analysis: tokenizers, gender word lists and each document's gender magnitudes."""

__all__ = ["DEFAULT_MAGNITUDE", "MAGNITUDES"]

#: Gender magnitude of a document: term count, ``ln(1 + count)`` (the reference's), or any-occurrence.
MAGNITUDES = ("tc", "tf", "bool")
DEFAULT_MAGNITUDE = "tf"
