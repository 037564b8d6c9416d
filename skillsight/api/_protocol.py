"""HTTP/1.1 for every listener, with the bounds uvicorn leaves out: header size and count (431),
read timeouts (408), and a limit of open connections (503).

uvicorn's httptools protocol buffers a header line until it ends, so a 64 MB header is read
whole and answered; it has no timeout while a request's header or body trickles in, nor for a
connection that never sends a byte. This protocol counts the bytes of each request's head as they
arrive and refuses past ``max_header_bytes`` without reading further; it times out a request that
stalls ``read_timeout_s`` or takes longer than ``request_read_timeout_s`` to arrive whole. After
a refusal the connection reads and drops what the client still sends for a moment (a lingering
close), so the client sees the answer rather than a reset, then closes.
"""

from __future__ import annotations

import asyncio
import http
import logging
from dataclasses import dataclass
from typing import Any

import httptools
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

log = logging.getLogger(__name__)

_LINGER_S = 1.0
_LINGER_BYTES = 1 << 20


@dataclass(frozen=True)
class ListenerLimits:
    max_header_bytes: int = 64 * 1024
    max_headers: int = 100
    read_timeout_s: float = 15.0
    request_read_timeout_s: float = 60.0


class _Refused(Exception):
    """Stops the parser after the connection was answered and is being closed."""


class BoundedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, bounded; :func:`bounded_protocol` sets its limits."""

    limits = ListenerLimits()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._reading_head = True
        self._reading = False  # a request has begun and is not yet whole
        self._head_bytes = 0
        self._header_count = 0
        self._refused = False
        self._lingered = 0
        self._idle: asyncio.TimerHandle | None = None
        self._deadline: asyncio.TimerHandle | None = None

    # -- connection -----------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_idle()  # a connection that never sends a byte is closed too

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_timers()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            self._lingered += len(data)
            if self._lingered > _LINGER_BYTES:
                self.transport.close()
            return
        if self._reading or self._reading_head:
            self._arm_idle()
        if self._reading_head:
            room = self.limits.max_header_bytes - self._head_bytes
            if len(data) > room:
                self._feed(data[:room])
                if self._refused:
                    return
                if self._reading_head:
                    self._refuse(431, "request header fields are too large")
                    return
                data = data[room:]
            else:
                self._head_bytes += len(data)
        self._feed(data)

    def _feed(self, data: bytes) -> None:
        self._unset_keepalive_if_required()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
        except httptools.HttpParserError:
            if not self._refused:
                self._refuse(400, "invalid HTTP request")

    # -- parser callbacks -----------------------------------------------------------------

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._reading = True
        self._header_count = 0
        self._cancel(self._deadline)
        self._deadline = self.loop.call_later(
            self.limits.request_read_timeout_s, self._timed_out, "the request took too long"
        )

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_count += 1
        if self._header_count <= self.limits.max_headers:
            super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._reading_head = False
        if self._header_count > self.limits.max_headers:
            self._refuse(431, f"more than {self.limits.max_headers} header fields")
            raise _Refused
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._reading = False
        self._reading_head = True
        self._head_bytes = 0
        self._cancel_timers()
        super().on_message_complete()

    # -- refusing -------------------------------------------------------------------------

    def _timed_out(self, why: str) -> None:
        if self._refused or self.transport.is_closing():
            return
        if not self._reading:
            self.transport.close()  # idle before any request: nothing to answer
            return
        self._refuse(408, f"{why} (request read timeout)")

    def _refuse(self, status: int, message: str) -> None:
        """Answer ``status`` unless a response has begun, then drop the rest and close."""
        self._refused = True
        self._cancel_timers()
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            cycle.disconnected = True  # the app's receive() sees a disconnect, its send() nothing
            cycle.message_event.set()
            if cycle.response_started:
                self.transport.close()
                return
        log.info("HTTP %d to %s: %s", status, self.client, message)
        body = message.encode()
        phrase = http.HTTPStatus(status).phrase.encode()
        self.transport.write(
            b"HTTP/1.1 %d %s\r\ncontent-type: text/plain; charset=utf-8\r\n"
            b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (status, phrase, len(body), body)
        )
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.loop.call_later(_LINGER_S, self.transport.close)

    # -- timers ---------------------------------------------------------------------------

    def _arm_idle(self) -> None:
        self._cancel(self._idle)
        self._idle = self.loop.call_later(
            self.limits.read_timeout_s, self._timed_out, "no data for too long"
        )

    @staticmethod
    def _cancel(timer: asyncio.TimerHandle | None) -> None:
        if timer is not None:
            timer.cancel()

    def _cancel_timers(self) -> None:
        self._cancel(self._idle)
        self._cancel(self._deadline)
        self._idle = self._deadline = None


def bounded_protocol(limits: ListenerLimits) -> type[BoundedHttpProtocol]:
    """The protocol class for a listener with ``limits``."""
    return type("BoundedHttpProtocol", (BoundedHttpProtocol,), {"limits": limits})
