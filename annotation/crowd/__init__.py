"""The crowd batch's life cycle: a batch's settings and costs, its HITs, publishing them to a
provider, syncing and recording answers, HIT statuses, and the providers (in-house, MTurk,
Prolific) with their clients.

Pure: :mod:`.costs`, :mod:`.hit_groups`, the platforms' clients :mod:`.clients` (``mturk_api``,
``mturk_xml``, ``prolific_api``). Reads: :mod:`.selectors` (batches, progress, spending). Writes: :mod:`.services`,
:mod:`.providers`.
Shells: :mod:`.views`, :mod:`.api` with :mod:`.serializers`, :mod:`.forms`.
"""
