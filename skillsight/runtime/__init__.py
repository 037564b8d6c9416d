"""The composition root: every service of a process built from Settings, in one place.

``skillsight serve`` (all roles, with the HTTP and gRPC listeners of :mod:`skillsight.api`),
``skillsight worker``, ``skillsight eval worker`` and the tests all build their services with
:func:`build_services`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from skillsight._faces import lazy_face

if TYPE_CHECKING:  # each loaded on first use: the services load the store (chdb), the heap not
    from skillsight.runtime._evaluation import (
        ServiceEvaluators,
        build_scheduler,
        service_evaluators,
    )
    from skillsight.runtime._heap import settle_heap
    from skillsight.runtime._process import parse_shard, run_services, stop_on_signals
    from skillsight.runtime._services import ROLES, Role, Services, build_services, role_named

__all__ = [
    "ROLES",
    "Role",
    "ServiceEvaluators",
    "Services",
    "build_scheduler",
    "build_services",
    "parse_shard",
    "role_named",
    "run_services",
    "service_evaluators",
    "settle_heap",
    "stop_on_signals",
]

__getattr__, __dir__ = lazy_face(globals())
