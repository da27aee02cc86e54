"""Shared state changes of every app: leases, API tokens, storage folders, staged uploads, rate limits
in the shared cache, input limits and names. One topic a module; callers import the module.
"""
