"""The crowd batch's life cycle: a batch's settings and costs, its HITs, publishing them to a
provider, syncing and recording answers, HIT statuses, and the providers (in-house, MTurk,
Prolific) with their clients.

Pure: :mod:`.costs`, :mod:`.hit_groups`, the platforms' clients :mod:`.clients` (``mturk_api``,
``mturk_xml``, ``prolific_api``). Reads: :mod:`.selectors` (batches, progress, spending). Writes: :mod:`.services`,
:mod:`.providers`.
Shells: :mod:`.serializers`, :mod:`.forms` (the batch pages that use them are :mod:`annotation.batches`).

The kernel of annotation's sub-domains: it imports none of them. Those above plug into a batch's
creation, publication and sync through :mod:`.services.hooks` (``tests/test_architecture.py``
keeps the order).
"""
