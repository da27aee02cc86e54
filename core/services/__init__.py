"""Shared state changes of every app: leases, API tokens, storage folders, staged uploads, rate limits
in the shared cache, input limits and names. One topic a module; callers import the module.
"""

# The modules that declare background jobs, loaded with the package (core.jobs.registry discovers
# jobs by importing each app's ``services``).
from core.services import connections as connections
