"""The crowd platforms, one folder each (``platforms/<name>/``): who does the work and how
it reaches this site.

A platform's folder holds everything that is that platform's: its provider (``provider.py``, the
:class:`annotation.crowd.providers.CrowdProvider` the kernel speaks to, with its prices and the batch
options it takes), its API client where it has one (pure, no Django), its services, pages and API,
and the hooks it plugs into a batch's life cycle, named in its package's ``PLUG_INS``. It imports
the kernel (``annotation.crowd``), the sub-domains below it (results, quality) and the models; no
platform imports another (``tests/test_architecture.py``). The kernel lists the platforms once,
``annotation.crowd.providers.base.PLATFORMS``; the list of providers and the plug-ins follow it.
"""
