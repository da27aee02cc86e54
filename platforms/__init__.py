"""The crowd platforms, one folder each (``platforms/<name>/``): who does the work and how it reaches this site.

A platform's folder holds all that is that platform's: its provider (the
:class:`annotation.crowd.providers.CrowdProvider` the kernel speaks to), its pure API client, its
services, pages and API, and the hooks named in its package's ``PLUG_INS``. No platform imports another
(``tests/test_architecture.py``); the kernel lists them once, ``annotation.crowd.providers.base.PLATFORMS``.
"""
