"""What the answers add up to: aggregation into one label per query, agreement, the review
queue's statuses, and the export formats with what a dataset card states.

Pure: :mod:`.aggregation`, :mod:`.agreement`, :mod:`.review`, :mod:`.export_formats`.
Reads: :mod:`.selectors` (judgments, labels and their sources, agreement, the results cache).
Shells: :mod:`.views` (export downloads), :mod:`.forms` and :mod:`.serializers` (an export's
request). Exports are written with their dataset cards by :mod:`annotation.exports.services`
(a card states the study's facts); the review queue's page is :mod:`annotation.quality.views`
(every ruling is quality's adjudication).
"""
