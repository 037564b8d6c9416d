"""OTLP receivers: HTTP routes and the gRPC server, both feeding one Collector."""

from __future__ import annotations

from skillsight.ingest.receivers.grpc import GrpcReceiver
from skillsight.ingest.receivers.http import otlp_http_routes

__all__ = ["GrpcReceiver", "otlp_http_routes"]
