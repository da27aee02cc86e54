"""The shared app: what every other app uses.

Refusals of a request (:mod:`core.errors`), atomic files and hashing (:mod:`genderbias.files.atomic`), cache and
staging folders (:mod:`core.services.storage`), names (:mod:`core.services.names`), bulk inserts
(:mod:`core.db`), the :class:`~core.models.Job` progress record with its pages, API and
task wrapper (:mod:`core.jobs`, :mod:`core.progress`, :mod:`core.tasks`, :mod:`core.jobs.sweeper`), permissions
(:mod:`core.web.permissions`) and command-line helpers (:mod:`core.management.cli`). Imports flow one
way: apps -> core, never core -> apps (the whole-pipeline ``demo`` command, which drives
every app, lives in ``metrics``, the app on top).
"""
