"""The annotation app: gender labels for queries, from a crowd, in-house annotators and machines. One
app in sub-domains (docs/architecture.md); other apps use the facades :mod:`.services` and :mod:`.selectors`."""
