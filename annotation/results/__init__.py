"""What the answers add up to: labels, agreement, the review queue's statuses and the export formats.
Pure: :mod:`.review`, :mod:`.export_formats`. Reads: :mod:`.selectors`. Shells: :mod:`.views`,
:mod:`.forms`, :mod:`.serializers`."""
