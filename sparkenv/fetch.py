"""sparkenv's own HTTP(S) requests (index pages, metadata, byte ranges of wheels, sdists): one opener
and one TLS context for the whole process.

`urllib.request.urlopen` without a context builds a new TLS context for every connection, and building
one loads the system's CA bundle again: ~25 ms of CPU per request, more than the request itself takes
over a warm network, for the hundreds of requests a lock makes. One context made the default way
(`ssl.create_default_context`, as urlopen's is, so SSL_CERT_FILE and the system store count alike) is
made once and shared: its TLS sessions are reused too. The opener is urllib's default one otherwise
(proxies from the environment, redirects).
"""

from __future__ import annotations

import threading
import urllib.request
from typing import Any

_lock = threading.Lock()
_opener: urllib.request.OpenerDirector | None = None


def _the_opener() -> urllib.request.OpenerDirector:
    global _opener
    with _lock:
        if _opener is None:
            import ssl

            context = ssl.create_default_context()
            _opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=context))
        return _opener


def urlopen(req: urllib.request.Request | str, timeout: float) -> Any:
    """urllib.request.urlopen(req, timeout=timeout) through the shared opener (same errors)."""
    return _the_opener().open(req, timeout=timeout)
