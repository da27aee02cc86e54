"""What the answers add up to: aggregation into one label per query, agreement, the review
queue, and the exported query sets with their files and dataset cards.

Pure: :mod:`.aggregation`, :mod:`.agreement`, :mod:`.review`, :mod:`.export_formats`.
Reads: :mod:`.selectors` (judgments, labels and their sources, agreement, the results cache).
Writes: :mod:`.services` (exports). Shells: :mod:`.views` (the review queue, export downloads).
"""
