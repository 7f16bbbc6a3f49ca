"""sparkenv's own HTTP(S) requests (index pages, metadata, byte ranges of wheels, sdists): one opener
and one TLS context for the whole process.

`urllib.request.urlopen` without a context builds a new TLS context for every connection, and building
one loads the system's CA bundle again: more CPU per request than the request itself takes over a
warm network, for the hundreds of requests a lock makes. One context made the default way
(`ssl.create_default_context`, as urlopen's is, so SSL_CERT_FILE and the system store count alike) is
made once and shared: its TLS sessions are reused too. The opener is urllib's default one otherwise
(proxies from the environment, redirects).

Each host name is looked up once per process, too: a lock opens a connection per request, a few
hundred of them, 16 at a time, and a resolver that is asked for the same name 16 times at once may
answer some of them only after its timeout (seen: 5 s stalls, and "Temporary failure in name
resolution" at 32 at once). A failed look-up is not kept.

Connections are kept open and reused (HTTP/1.1 keep-alive): a new connection costs a TCP and a TLS
handshake (benchmarks/fetch_keepalive.py), and a lock makes hundreds of requests to two or three hosts.
urllib closes every connection after one request (it sends `Connection: close`); here a connection whose
response was read whole goes back to a small pool per host (scheme, host, port), shared by the threads,
and the next request to that host takes it. A response closed before its end, a server that said it
closes, a request through a proxy tunnel: that connection is closed, as urllib does. A server may drop
an idle connection at any time: a request on a reused connection that finds it dropped is sent once
more on a new one (only GETs are made here). Every request still has its timeout, set on the socket
for each request; redirects, proxies and errors are urllib's, as before.

A socket timeout bounds one read; an index that sends a byte at a time answers each read in time and
never ends. Each request here also has a deadline for the whole of it (index/deadline.py: the smaller of
its timeout, the per-request deadline and what is left of the lock's total); past it the socket is shut
down and the request raises deadline.Expired, a TimeoutError.
"""

from __future__ import annotations

import http.client
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

from sparkenv.index import deadline

_lock = threading.Lock()
_opener: urllib.request.OpenerDirector | None = None
_addresses: dict[tuple[str, int], list[tuple[Any, ...]]] = {}
_DEFAULT = object()
IDLE_PER_HOST = 16  # as many as the threads that read at once (lock/early.py's workers)
IDLE_S = 20.0  # an idle connection older than this is closed, not reused (servers drop them)
_idle: dict[tuple[str, str], list[tuple[float, http.client.HTTPConnection]]] = {}
opened = 0  # connections made by this process (a test and the benchmark count them)
# what a dropped idle connection raises when it is used again: then the request is sent once more
_DROPPED = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, ConnectionAbortedError)


def _lookup(host: str, port: int) -> list[tuple[Any, ...]]:
    key = (host, port)
    found = _addresses.get(key)
    if found is None:
        found = socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM)
        _addresses[key] = found
    return found


def _connect(address: tuple[str, int], timeout: Any = _DEFAULT, source_address: Any = None) -> socket.socket:
    """socket.create_connection over the remembered addresses of the host, each tried in turn."""
    host, port = address
    error: OSError | None = None
    for *_, sockaddr in _lookup(host, port):
        try:
            if timeout is _DEFAULT:
                return socket.create_connection(sockaddr[:2], source_address=source_address)
            return socket.create_connection(sockaddr[:2], timeout, source_address)
        except OSError as exc:
            error = exc
    raise error or OSError(f"no address for {host}")


def _counted(address: tuple[str, int], timeout: Any = _DEFAULT, source_address: Any = None) -> socket.socket:
    global opened
    sock = _connect(address, timeout, source_address)
    with _lock:
        opened += 1
    return sock


class _Response(http.client.HTTPResponse):
    """Hands its connection back to the pool once its body was read whole; closes it when the response
    is closed before its end (unread bytes would be taken for the next response)."""

    pooled: tuple[tuple[str, str], http.client.HTTPConnection] | None = None
    watch: deadline.Watch | None = None  # the request's deadline (index/deadline.py)
    _cut = False

    def close(self) -> None:
        self._cut = self.fp is not None
        super().close()

    def _expired(self) -> bool:
        return self.watch is not None and self.watch.fired

    def _says(self) -> str:
        return self.watch.says if self.watch is not None else deadline.request_message()

    def read(self, amt: int | None = None) -> bytes:
        return self._in_time(super().read, amt)

    def readinto(self, b: Any) -> int:
        return self._in_time(super().readinto, b)

    def _in_time(self, read: Callable[[Any], Any], arg: Any) -> Any:
        # a body cut at its deadline may end early without an error: never handed on as if whole
        try:
            got = read(arg)
        except (OSError, http.client.HTTPException, ValueError):
            if self._expired():
                raise deadline.Expired(self._says()) from None
            raise
        if self._expired():
            raise deadline.Expired(self._says())
        return got

    def _close_conn(self) -> None:
        super()._close_conn()  # type: ignore[misc]
        if self.watch is not None:
            self.watch.done()
        pooled, self.pooled = self.pooled, None
        if pooled is not None:
            key, conn = pooled
            if self._cut or self.will_close or self._expired():
                conn.close()
            else:
                _give_back(key, conn)


class _HTTPConnection(http.client.HTTPConnection):
    response_class = _Response

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = _counted


class _HTTPSConnection(http.client.HTTPSConnection):
    response_class = _Response

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = _counted


def _take(key: tuple[str, str]) -> http.client.HTTPConnection | None:
    now = time.monotonic()
    stale = []
    found = None
    with _lock:
        idle = _idle.get(key, [])
        while idle:
            since, conn = idle.pop()
            if now - since <= IDLE_S:
                found = conn
                break
            stale.append(conn)
    for conn in stale:
        conn.close()
    return found


def _give_back(key: tuple[str, str], conn: http.client.HTTPConnection) -> None:
    with _lock:
        idle = _idle.setdefault(key, [])
        if len(idle) < IDLE_PER_HOST:
            idle.append((time.monotonic(), conn))
            return
    conn.close()


def close_idle() -> None:
    """Close every pooled connection (a test's server shut down; nothing else needs it)."""
    with _lock:
        conns = [c for idle in _idle.values() for _, c in idle]
        _idle.clear()
    for conn in conns:
        conn.close()


def _open(
    handler: urllib.request.AbstractHTTPHandler, conn_class: type, req: urllib.request.Request, **args: Any
) -> http.client.HTTPResponse:
    """urllib's do_open, on a pooled connection: the same headers but `Connection: close`, the same
    errors (URLError for a request that cannot be sent)."""
    if req._tunnel_host or not req.host:  # type: ignore[attr-defined]  # a proxy tunnel: urllib's own way
        return handler.do_open(conn_class, req, **args)  # type: ignore[no-any-return]
    key = (req.type, req.host)
    headers = dict(req.unredirected_hdrs)
    headers.update({k: v for k, v in req.headers.items() if k not in headers})
    headers = {name.title(): val for name, val in headers.items()}
    timeout = req.timeout  # type: ignore[attr-defined]
    says = ""
    if isinstance(timeout, (int, float)):  # the whole request's deadline; past the total: Expired
        timeout, says = deadline.bound(timeout)
    started = time.monotonic()
    for attempt in (1, 2):
        conn = _take(key) if attempt == 1 else None
        reused = conn is not None
        if conn is None:
            conn = conn_class(req.host, timeout=timeout, **args)
        elif conn.sock is not None and isinstance(timeout, (int, float)):
            conn.sock.settimeout(timeout)
        watch = None
        try:
            try:
                conn.request(req.get_method(), req.selector, req.data, headers)
            except OSError as err:
                if reused and isinstance(err, _DROPPED):
                    raise
                raise urllib.error.URLError(err) from None
            if isinstance(timeout, (int, float)):
                watch = deadline.watch(conn.sock, started + timeout - time.monotonic(), says)
            try:
                resp = conn.getresponse()
            except (OSError, http.client.HTTPException):
                if watch is not None and watch.fired:  # cut at its deadline, not dropped: no retry
                    raise deadline.Expired(says) from None
                raise
        except _DROPPED:
            conn.close()
            if watch is not None:
                watch.done()
            if reused:  # the server dropped it while it was idle: once more, on a new connection
                continue
            raise
        except BaseException:
            conn.close()
            if watch is not None:
                watch.done()
            raise
        break
    resp.watch = watch  # type: ignore[attr-defined]
    if conn.sock is not None:  # else the server said it closes: nothing to hand back
        resp.pooled = (key, conn)  # type: ignore[attr-defined]
    resp.url = req.get_full_url()  # type: ignore[attr-defined]
    resp.msg = resp.reason  # type: ignore[assignment]  # urllib's callers read the reason there
    return resp


class _HTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req: urllib.request.Request) -> Any:
        return _open(self, _HTTPConnection, req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req: urllib.request.Request) -> Any:
        return _open(self, _HTTPSConnection, req, context=self._context)  # type: ignore[attr-defined]


def _the_opener() -> urllib.request.OpenerDirector:
    global _opener
    with _lock:
        if _opener is None:
            import ssl

            context = ssl.create_default_context()
            _opener = urllib.request.build_opener(_HTTPHandler(), _HTTPSHandler(context=context))
        return _opener


def urlopen(req: urllib.request.Request | str, timeout: float) -> Any:
    """urllib.request.urlopen(req, timeout=timeout) through the shared opener (same errors)."""
    return _the_opener().open(req, timeout=timeout)
