"""The HTTP face of the service: the REST API (and OTLP/HTTP on its port) and ``serve``."""

from __future__ import annotations

from skillsight.api._app import create_app
from skillsight.api._server import Endpoints, serve

__all__ = ["Endpoints", "create_app", "serve"]
