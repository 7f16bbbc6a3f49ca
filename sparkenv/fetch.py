"""sparkenv's own HTTP(S) requests (index pages, metadata, byte ranges of wheels, sdists): one opener
and one TLS context for the whole process.

`urllib.request.urlopen` without a context builds a new TLS context for every connection, and building
one loads the system's CA bundle again: ~25 ms of CPU per request, more than the request itself takes
over a warm network, for the hundreds of requests a lock makes. One context made the default way
(`ssl.create_default_context`, as urlopen's is, so SSL_CERT_FILE and the system store count alike) is
made once and shared: its TLS sessions are reused too. The opener is urllib's default one otherwise
(proxies from the environment, redirects).

Each host name is looked up once per process, too: a lock opens a connection per request, a few
hundred of them, 16 at a time, and a resolver that is asked for the same name 16 times at once may
answer some of them only after its timeout (seen: 5 s stalls, and "Temporary failure in name
resolution" at 32 at once). A failed look-up is not kept.
"""

from __future__ import annotations

import http.client
import socket
import threading
import urllib.request
from typing import Any

_lock = threading.Lock()
_opener: urllib.request.OpenerDirector | None = None
_addresses: dict[tuple[str, int], list[tuple[Any, ...]]] = {}
_DEFAULT = object()


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


class _HTTPConnection(http.client.HTTPConnection):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = _connect


class _HTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = _connect


class _HTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(_HTTPConnection, req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(_HTTPSConnection, req, context=self._context)  # type: ignore[attr-defined]


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
