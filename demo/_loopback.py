"""A threaded HTTP server on 127.0.0.1, port picked by the OS, served from a daemon thread.

The lifecycle the scripted model servers share; each says how it answers (``_handler``) and
what URL a client takes (``base_url``).
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType


class LoopbackServer(ABC):
    """Start with ``with server as url:`` (or :meth:`start` / :meth:`stop`)."""

    thread_name = "loopback-server"

    def __init__(self) -> None:
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @abstractmethod
    def _handler(self) -> type[BaseHTTPRequestHandler]:
        """The request handler class, bound to this server's state."""

    @property
    def root_url(self) -> str:
        """``http://127.0.0.1:<port>`` of the running server."""
        if self._server is None:
            raise RuntimeError("server is not running")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def base_url(self) -> str:
        """What a client takes as its base URL (the root unless a subclass says otherwise)."""
        return self.root_url

    def start(self) -> str:
        """Bind 127.0.0.1 on an ephemeral port, serve in a daemon thread, return the base URL."""
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name=self.thread_name, daemon=True
        )
        self._thread.start()
        return self.base_url

    def stop(self) -> None:
        """Stop serving and release the port."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> str:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
