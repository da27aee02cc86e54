"""Text analysis: tokenizers, gender word lists and each document's gender magnitudes."""

#: Gender magnitude of a document: term count, ``ln(1 + count)`` (the reference's), or any-occurrence.
MAGNITUDES = ("tc", "tf", "bool")
DEFAULT_MAGNITUDE = "tf"
