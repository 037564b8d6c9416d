"""ClickHouse's HTTP interface, served from chdb, so the server transport is tested on real SQL.

chdb holds one data folder per process (a second ``chdb.connect`` with another path fails with
``EmbeddedServer already initialized``), and the test process already runs an embedded store.
So the endpoint runs in a child process: :class:`ChdbHttpServer` starts ``python chdb_http.py``,
reads the port it prints, and stops it on exit. The child also stops when its stdin closes, so
it dies with the test process even after a crash.

What it speaks is the subset clickhouse-connect uses: GET/POST ``/`` with the statement in the
``query`` URL argument, the body, or a multipart form; ``database``; settings as URL arguments;
``param_<name>`` query parameters; request bodies gzip/deflate/lz4/zstd-compressed; INSERT data
in the body (``FORMAT X`` or ``input('structure')``); ``/ping``; the ``X-ClickHouse-*`` response
headers; and errors as ClickHouse reports them (non-200 status, exception code header, text).
Responses are never compressed. Each statement runs alone (a lock), as on a ClickHouse session.
"""

from __future__ import annotations

import argparse
import base64
import email.parser
import email.policy
import json
import os
import re
import select
import selectors
import subprocess
import sys
import threading
import time
import uuid
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit

_READY = "chdb-http listening on "

# URL arguments the HTTP interface consumes itself; every other one is a setting of the statement.
_TRANSPORT_ARGS = frozenset(
    {
        "query",
        "database",
        "default_format",
        "user",
        "password",
        "quota_key",
        "query_id",
        "session_id",
        "session_timeout",
        "session_check",
        "compress",
        "decompress",
        "buffer_size",
        "wait_end_of_query",
        "client_protocol_version",
        "role",
        "stacktrace",
        "close_session",
        "enable_http_compression",
        "http_zlib_compression_level",
        "send_progress_in_http_headers",
        "http_headers_progress_interval_ms",
        "cancel_http_readonly_queries_on_client_close",
    }
)
_SETTING_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_NUMBER = re.compile(r"^-?[0-9]+(\.[0-9]+)?$")
_ERROR_CODE = re.compile(r"Code:\s*(\d+)")
_LEADING_COMMENTS = re.compile(r"^(\s+|--[^\n]*\n|/\*.*?\*/)*", re.DOTALL)
_TRAILING_FORMAT = re.compile(r"\s+FORMAT\s+([A-Za-z0-9_]+)\s*;?\s*$", re.IGNORECASE)
_INPUT_FUNCTION = re.compile(r"\binput\s*\(\s*('(?:[^'\\]|\\.)*')\s*\)", re.IGNORECASE | re.DOTALL)
_RESULT_STATEMENTS = frozenset({"SELECT", "WITH", "SHOW", "DESCRIBE", "DESC", "EXISTS", "EXPLAIN"})

# ClickHouse error codes this endpoint raises itself.
_UNKNOWN_EXCEPTION = 1002
_AUTHENTICATION_FAILED = 516
_BAD_ARGUMENTS = 36


class StatementError(Exception):
    """A statement failed; carries the ClickHouse error code and the HTTP status to answer."""

    def __init__(self, message: str, code: int, status: int = 500) -> None:
        super().__init__(message)
        self.code = code
        self.status = status


@dataclass
class Request:
    """One HTTP request, decoded into what ClickHouse would execute."""

    query: str
    body: bytes
    args: dict[str, str]
    query_id: str = field(default_factory=lambda: str(uuid.uuid4()))


@dataclass
class Result:
    data: bytes
    fmt: str | None
    summary: dict[str, str]


def _quoted(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _literal(value: str) -> str:
    """A setting value as SET wants it: numbers bare, everything else a string."""
    return value if _NUMBER.match(value) else _quoted(value)


def _identifier(name: str) -> str:
    return "`" + name.replace("\\", "\\\\").replace("`", "\\`") + "`"


def _error(exc: Exception) -> StatementError:
    message = str(exc)
    match = _ERROR_CODE.search(message)
    return StatementError(message, int(match.group(1)) if match else _UNKNOWN_EXCEPTION)


class ChdbEndpoint:
    """Executes HTTP-interface requests on one chdb connection, one statement at a time.

    A chdb connection is a session: ``USE`` and ``SET`` persist. ClickHouse's HTTP interface
    runs each request with its own database and settings, so before each statement the endpoint
    switches database and brings settings to exactly those of the request (``SET x = DEFAULT``
    for any an earlier request set and this one does not).
    """

    def __init__(self, data_dir: Path) -> None:
        import chdb  # imported here so the parent process never loads a second engine

        self._data_dir = data_dir
        self._bodies = data_dir / "_request_bodies"
        self._bodies.mkdir(parents=True, exist_ok=True)
        self._conn = chdb.connect(str(data_dir / "db"))  # type: ignore[no-untyped-call]
        self._lock = threading.Lock()
        self._database = "default"
        self._applied: dict[str, str] = {}
        raw = self._conn.query("SELECT version(), timezone()", "TabSeparated").bytes()
        self.version, self.timezone = raw.decode().strip().split("\t")

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def execute(self, request: Request) -> Result:
        settings = {
            k: v
            for k, v in request.args.items()
            if k not in _TRANSPORT_ARGS and not k.startswith("param_")
        }
        params = {k[len("param_") :]: v for k, v in request.args.items() if k.startswith("param_")}
        database = request.args.get("database") or "default"
        sql, infile = self._statement(request)
        try:
            with self._lock:
                self._prepare(database, settings)
                fmt = request.args.get("default_format") or "TabSeparated"
                try:
                    result = self._conn.query(sql, fmt, params=params or None)
                except Exception as exc:
                    raise _error(exc) from exc
        finally:
            if infile is not None:
                infile.unlink(missing_ok=True)
        data = result.bytes() or b""
        summary = {
            "read_rows": str(result.rows_read()),
            "read_bytes": str(result.bytes_read()),
            "written_rows": str(_stat(result, "rows_written")),
            "written_bytes": str(_stat(result, "bytes_written")),
            "total_rows_to_read": "0",
            "result_rows": "0",
            "result_bytes": str(len(data)),
            "elapsed_ns": str(int(result.elapsed() * 1e9)),
        }
        return Result(data, _output_format(sql, fmt), summary)

    def _prepare(self, database: str, settings: Mapping[str, str]) -> None:
        for name in settings:
            if not _SETTING_NAME.match(name):
                raise StatementError(f"Code: 115. Unknown setting {name!r}", 115)
        try:
            if database != self._database:
                self._conn.query(f"USE {_identifier(database)}")
                self._database = database
            for name in [n for n in self._applied if n not in settings]:
                self._conn.query(f"SET {name} = DEFAULT")
                del self._applied[name]
            for name, value in settings.items():
                if self._applied.get(name) != value:
                    self._conn.query(f"SET {name} = {_literal(value)}")
                    self._applied[name] = value
        except Exception as exc:
            raise _error(exc) from exc

    def _statement(self, request: Request) -> tuple[str, Path | None]:
        """The SQL to run in chdb and the temporary file holding INSERT data, if any."""
        sql = request.query
        if not sql:
            return request.body.decode("utf-8", errors="surrogateescape"), None
        if not request.body:
            return sql, None
        head = _LEADING_COMMENTS.sub("", sql, count=1)
        if head[:6].upper() != "INSERT":
            # As in ClickHouse: the body continues the statement begun in the URL.
            return sql + "\n" + request.body.decode("utf-8", errors="surrogateescape"), None
        fmt = _TRAILING_FORMAT.search(sql)
        if fmt is None:  # INSERT ... VALUES with the rows in the body
            return sql + " " + request.body.decode("utf-8", errors="surrogateescape"), None
        infile = self._bodies / f"{uuid.uuid4().hex}.bin"
        infile.write_bytes(request.body)
        path = _quoted(str(infile))
        head_sql = sql[: fmt.start()]
        if _INPUT_FUNCTION.search(head_sql):
            # input('structure') reads the body; file() reads the same bytes from disk.
            rewritten = _INPUT_FUNCTION.sub(
                lambda m: f"file({path}, '{fmt.group(1)}', {m.group(1)})", head_sql, count=1
            )
            return rewritten, infile
        return f"{head_sql} FROM INFILE {path} FORMAT {fmt.group(1)}", infile


def _stat(result: Any, name: str) -> int:
    getter = getattr(result, name, None)
    return int(getter()) if callable(getter) else 0


def _output_format(sql: str, default: str) -> str | None:
    """The format of the statement's result; None when it produces no result set."""
    head = _LEADING_COMMENTS.sub("", sql, count=1).lstrip("(")
    keyword = re.split(r"\W", head, maxsplit=1)[0].upper()
    if keyword not in _RESULT_STATEMENTS:
        return None
    fmt = _TRAILING_FORMAT.search(sql)
    return fmt.group(1) if fmt else default


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as clickhouse-connect pools connections
    # Headers and body leave in two writes; with Nagle on, the second waits out the client's
    # delayed ACK (about 40 ms a request).
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass  # a request log would only bury test failures

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def _handle(self) -> None:
        try:
            body = self._read_body()
        except (ValueError, OSError, zlib.error) as exc:
            self.close_connection = True
            self._reply(400, f"Code: {_BAD_ARGUMENTS}. Cannot read the request body: {exc}\n")
            return
        url = urlsplit(self.path)
        if url.path.rstrip("/") == "/ping" or (
            url.path == "/" and self.command == "GET" and not url.query
        ):
            self._reply(200, "Ok.\n")
            return
        args = dict(parse_qsl(url.query, keep_blank_values=True))
        content_type = self.headers.get("Content-Type", "")
        if content_type.startswith("multipart/form-data"):
            fields, body = _form_fields(content_type, body), b""
            args.update(fields)
        if not self._authenticated(args):
            self._reply(
                403,
                f"Code: {_AUTHENTICATION_FAILED}. DB::Exception: Authentication failed: "
                "password is incorrect, or there is no user with such name. "
                "(AUTHENTICATION_FAILED)\n",
                code=_AUTHENTICATION_FAILED,
            )
            return
        request = Request(query=args.get("query", ""), body=body, args=args)
        request.query_id = args.get("query_id") or request.query_id
        endpoint = self.server.endpoint
        try:
            if not request.query and not request.body:
                raise StatementError(f"Code: {_BAD_ARGUMENTS}. Empty query", _BAD_ARGUMENTS, 400)
            result = endpoint.execute(request)
        except StatementError as exc:
            text = str(exc)
            if "(version " not in text:
                text += f" (version {endpoint.version})"
            self._reply(exc.status, text + "\n", code=exc.code, query_id=request.query_id)
            return
        headers = {"X-ClickHouse-Summary": json.dumps(result.summary)}
        if result.fmt:
            headers["X-ClickHouse-Format"] = result.fmt
        self._reply(200, result.data, headers=headers, query_id=request.query_id)

    def _authenticated(self, args: Mapping[str, str]) -> bool:
        users = self.server.users
        if users is None:
            return True
        user = self.headers.get("X-ClickHouse-User") or args.get("user") or "default"
        password = self.headers.get("X-ClickHouse-Key") or args.get("password") or ""
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Basic "):
            decoded = base64.b64decode(auth[len("Basic ") :]).decode("utf-8")
            user, _, password = decoded.partition(":")
        return users.get(user) == password

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            body = b"".join(chunks)
        else:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        return _decompress(body, self.headers.get("Content-Encoding", ""))

    def _reply(
        self,
        status: int,
        body: bytes | str,
        *,
        code: int | None = None,
        headers: Mapping[str, str] | None = None,
        query_id: str | None = None,
    ) -> None:
        data = body.encode("utf-8") if isinstance(body, str) else body
        endpoint = self.server.endpoint
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-ClickHouse-Server-Display-Name", "chdb-http")
        self.send_header("X-ClickHouse-Timezone", endpoint.timezone)
        if query_id is not None:
            self.send_header("X-ClickHouse-Query-Id", query_id)
        if code is not None:
            self.send_header("X-ClickHouse-Exception-Code", str(code))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


def _decompress(body: bytes, encoding: str) -> bytes:
    encoding = encoding.strip().lower()
    if not body or encoding in ("", "identity"):
        return body
    if encoding == "gzip":
        return zlib.decompress(body, 16 + zlib.MAX_WBITS)
    if encoding == "deflate":
        return zlib.decompress(body)
    if encoding == "lz4":
        import lz4.frame  # type: ignore[import-untyped]

        return bytes(lz4.frame.decompress(body))
    if encoding == "zstd":
        from backports import zstd  # type: ignore[import-not-found, unused-ignore]

        return bytes(zstd.decompress(body))
    raise ValueError(f"unsupported Content-Encoding {encoding!r}")


def _form_fields(content_type: str, body: bytes) -> dict[str, str]:
    """The text fields of a multipart/form-data body (clickhouse-connect's long-parameter path)."""
    parser = email.parser.BytesParser(policy=email.policy.HTTP)
    message = parser.parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + body)
    fields: dict[str, str] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if isinstance(name, str) and isinstance(payload, bytes):
            fields[name] = payload.decode("utf-8", errors="surrogateescape")
    return fields


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, endpoint: ChdbEndpoint, users: Mapping[str, str] | None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.endpoint = endpoint
        self.users = dict(users) if users is not None else None


def serve(data_dir: Path, users: Mapping[str, str] | None, max_seconds: float) -> None:
    """Run the endpoint until stdin closes or ``max_seconds`` pass; print the port when ready."""
    endpoint = ChdbEndpoint(data_dir)
    server = _Server(endpoint, users)

    def stop_when_parent_goes() -> None:
        deadline = time.monotonic() + max_seconds
        while time.monotonic() < deadline:
            ready, _, _ = select.select([sys.stdin], [], [], 1.0)
            if ready and not os.read(sys.stdin.fileno(), 4096):
                break
        server.shutdown()

    threading.Thread(target=stop_when_parent_goes, daemon=True).start()
    print(f"{_READY}{server.server_address[1]}", flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
        endpoint.close()


class ChdbHttpServer:
    """The endpoint in a child process; a context manager that starts and stops it."""

    def __init__(
        self,
        data_dir: Path,
        *,
        users: Mapping[str, str] | None = None,
        max_seconds: float = 3600.0,
        startup_timeout: float = 60.0,
    ) -> None:
        self.data_dir = data_dir
        self.users = users
        self.max_seconds = max_seconds
        self.startup_timeout = startup_timeout
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> ChdbHttpServer:
        command = [sys.executable, str(Path(__file__).resolve()), "--data-dir", str(self.data_dir)]
        command += ["--max-seconds", str(self.max_seconds)]
        if self.users is not None:
            command += ["--users", json.dumps(dict(self.users))]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self._process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
        )
        try:
            self.port = self._wait_ready(self._process)
        except BaseException:
            self._stop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop()

    def _wait_ready(self, process: subprocess.Popen[bytes]) -> int:
        assert process.stdout is not None
        deadline = time.monotonic() + self.startup_timeout
        line = b""
        # a selector, not select(): a long test session may hold descriptors past FD_SETSIZE
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            while not line.endswith(b"\n"):
                remaining = deadline - time.monotonic()
                if not selector.select(max(remaining, 0)):
                    raise RuntimeError(f"chdb-http did not start within {self.startup_timeout}s")
                chunk = os.read(process.stdout.fileno(), 1024)
                if not chunk:
                    raise RuntimeError(f"chdb-http exited at start-up (code {process.wait()})")
                line += chunk
        text = line.decode().strip()
        if not text.startswith(_READY):
            raise RuntimeError(f"chdb-http said {text!r} instead of its port")
        return int(text[len(_READY) :])

    def _stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.stdin is not None:
            process.stdin.close()  # the child's cue to shut down
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()

    def url(
        self,
        database: str = "default",
        *,
        user: str | None = None,
        password: str | None = None,
        scheme: str = "clickhouse",
    ) -> str:
        """A store URL for this endpoint; user and password are URL-encoded here."""
        credentials = ""
        if user is not None:
            credentials = quote(user, safe="")
            if password is not None:
                credentials += ":" + quote(password, safe="")
            credentials += "@"
        return f"{scheme}://{credentials}127.0.0.1:{self.port}/{quote(database, safe='')}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="ClickHouse HTTP interface served from chdb")
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--users", help="JSON object of user -> password; default: anyone")
    parser.add_argument("--max-seconds", type=float, default=3600.0)
    args = parser.parse_args(argv)
    users = json.loads(args.users) if args.users else None
    serve(args.data_dir, users, args.max_seconds)


if __name__ == "__main__":
    main()
