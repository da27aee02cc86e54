"""Routing: accept the machine's labels where it is sure enough, send the rest to the crowd. The names
the shells and the facade use, re-exported (the modules: docs/architecture.md).
"""

from annotation.machine.routing_text import guarantee_text, plan_summary
from annotation.machine.services.routing.act import refuse_while_waiting, route_and_publish, route_batch
from annotation.machine.services.routing.audit import audit_routing
from annotation.machine.services.routing.choice import reference_state
from annotation.machine.services.routing.plan import (
    DEFAULT_RISK,
    ESTIMATE,
    GUARANTEE,
    check_routing,
    parse_cascade,
    plan_routing,
    routing_request,
    size_sample,
)

__all__ = [
    "DEFAULT_RISK", "ESTIMATE", "GUARANTEE", "audit_routing", "check_routing", "guarantee_text", "parse_cascade",
    "plan_routing", "plan_summary", "reference_state", "refuse_while_waiting", "route_and_publish", "route_batch",
    "routing_request", "size_sample",
]  # fmt: skip
