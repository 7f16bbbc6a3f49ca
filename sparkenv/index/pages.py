"""What sparkenv keeps of the index pages it read (lock/fallbacks.py), by URL, under the index's own
HTTP caching rules, as uv keeps its pages.

A page of a big project is megabytes of JSON (thousands of files), read beside uv on every lock, and
decoding it costs more CPU than reading it. What the old-fallback rule took of it (its newest releases:
versions, files, upload times, requires-python, sha256, URLs) is kept here, small, with what the index
said of the page's freshness:
- fresh (`Cache-Control: max-age`, else `Expires` against `Date`, less the response's `Age`): taken
  without a request;
- stale with a validator (`ETag`, `Last-Modified`): asked again conditionally; a 304 is taken without a
  download or a decode, and the page is fresh again for as long as the 304 says;
- a page served again whole (a 200, or a server that gives neither freshness nor validators) whose
  bytes hash to the same sha256 as the kept one: taken without a decode, since the same bytes decode the
  same.
`no-store` keeps nothing; `no-cache` keeps the page but asks again every time. Nothing is served stale:
a page that cannot be asked again is unreadable, as it is without a cache.

One file per URL, named by the sha256 of the URL without its user-info; the file holds no credential
(the URL's user-info is left out, and sparkenv.core.outputs redacts what it writes). A file that cannot be
read, is not what this module writes, or names another URL is not trusted: the page is read from the
index and the file rewritten.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, TypeVar

from sparkenv.core.cache import Store
from sparkenv.core.redact import redact

STORE = Store("index-pages", "1")  # core/cache.py; bump the version when what is kept changes
_MAX_AGE = re.compile(r"(?:^|,)\s*max-age\s*=\s*\"?(\d+)\"?\s*(?:,|$)", re.IGNORECASE)


@dataclass
class Kept:
    """One page as kept: freshness, validators, the body's sha256, and what the caller kept of it."""

    url: str  # without user-info
    stored: float  # time.time() when the response was received
    lifetime: float  # seconds fresh after `stored` (0: ask again)
    no_cache: bool  # the index asks to be asked again every time
    etag: str
    last_modified: str
    kind: str  # what the page was ("json" or "html": the caller's words)
    digest: str  # sha256 of the body
    data: Any  # the caller's compact form (JSON types)

    def fresh(self, now: float | None = None) -> bool:
        now = time.time() if now is None else now
        # a clock set back since then: not trusted to be fresh
        return not self.no_cache and self.stored <= now < self.stored + self.lifetime

    def validators(self) -> dict[str, str]:
        """The headers of a conditional request for this page (none when the index gave no validator)."""
        out = {}
        if self.etag:
            out["If-None-Match"] = self.etag
        if self.last_modified:
            out["If-Modified-Since"] = self.last_modified
        return out


def digest(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def load(url: str) -> Kept | None:
    """The kept page of `url`; None when there is none or the file is not one this module wrote for it."""
    raw = STORE.load(redact(url))
    try:
        if not isinstance(raw, dict) or raw.get("url") != redact(url):
            return None
        kept = Kept(
            url=raw["url"],
            stored=float(raw["stored"]),
            lifetime=float(raw["lifetime"]),
            no_cache=raw["no_cache"] is True,
            etag=raw["etag"],
            last_modified=raw["last_modified"],
            kind=raw["kind"],
            digest=raw["digest"],
            data=raw["data"],
        )
    except (KeyError, TypeError, ValueError):
        return None
    texts = (kept.etag, kept.last_modified, kept.kind, kept.digest)
    if not all(isinstance(t, str) for t in texts) or len(kept.digest) != 64 or kept.lifetime != kept.lifetime:
        return None  # NaN lifetime above: never fresh, never trusted
    return kept


def save(kept: Kept) -> None:
    record = {k: getattr(kept, k) for k in Kept.__dataclass_fields__}
    record["url"] = redact(kept.url)
    STORE.save(record["url"], record)


def forget(url: str) -> None:
    import contextlib

    with contextlib.suppress(OSError):
        STORE.path(redact(url)).unlink()


_JSON = "application/vnd.pypi.simple.v1+json"


def get(url: str, timeout: float, conditional: dict[str, str]) -> tuple[int, bytes, Any] | None:
    """(status, body, headers) of the page: a success, or 304 to a conditional request; None when it
    cannot be read. Asked with the credentials sparkenv finds for its realm (sparkenv.index.credentials)."""
    import contextlib
    import urllib.error

    from sparkenv.index import credentials, fetch

    # compressed: a JSON page is text, 5-20 x smaller gzipped, and a large project's pages are tens of MB
    headers = {"Accept": f"{_JSON}, text/html;q=0.1", "Accept-Encoding": "gzip", **conditional}
    req = credentials.request(url, headers)
    try:
        with fetch.urlopen(req, timeout) as resp:
            body = _decoded_body(resp.read(), resp.headers.get("Content-Encoding", ""))
            return (resp.status, body, resp.headers) if body is not None else None
    except urllib.error.HTTPError as err:
        try:
            if err.code == 304 and conditional:
                err.read()  # nothing: its connection goes back to the pool
                return 304, b"", err.headers
            return None
        finally:
            with contextlib.suppress(Exception):
                err.close()
    except (OSError, ValueError):
        return None


# Past this a page is not read (a gzip body that inflates without end): the largest real pages are ~10 MB
MAX_PAGE = 512 * 1024**2


def _decoded_body(body: bytes, encoding: str) -> bytes | None:
    """The page's bytes as the index serves them uncompressed (what its sha256 is of, whichever way it
    came); None for an encoding not asked for, a damaged gzip stream, or one past MAX_PAGE. A stream of
    several gzip members (RFC 1952 allows it) is their bytes one after the other."""
    import zlib

    coding = encoding.strip().lower()
    if coding in ("", "identity"):
        return body
    if coding not in ("gzip", "x-gzip"):
        return None
    out = b""
    rest = body
    while rest:
        inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            out += inflate.decompress(rest, MAX_PAGE + 1 - len(out))
        except zlib.error:
            return None
        if len(out) > MAX_PAGE or not inflate.eof:
            return None
        rest = inflate.unused_data
    return out


def keep_again(kept: Kept, headers: Any) -> None:
    """The kept page confirmed (a 304, the same bytes): kept with what the index said this time. Not
    written again when nothing it says would change (no freshness, the same validators)."""
    told = policy(headers)
    if not told.store:
        forget(kept.url)
        return
    etag = told.etag or kept.etag  # a 304 need not repeat the validators
    modified = told.last_modified or kept.last_modified
    if told.lifetime == 0 and kept.lifetime == 0 and (etag, modified) == (kept.etag, kept.last_modified):
        return
    kept.stored, kept.lifetime, kept.no_cache = time.time(), told.lifetime, told.no_cache
    kept.etag, kept.last_modified = etag, modified
    save(kept)


def digest_now(url: str, timeout: float = 20.0) -> str:
    """The sha256 of the page's bytes as the index serves them now, known the way the old-fallback
    reader (fallbacks.releases) knows them, without decoding: a kept page still fresh, or confirmed by a
    304 or by the same bytes again. "" when there is no kept page or the page cannot be read. A page
    whose bytes changed is not kept here: the reader that judges the lock reads and keeps it."""
    kept = load(url)
    if kept is None:
        return ""
    if kept.fresh():
        return kept.digest
    page = get(url, timeout, kept.validators())
    if page is None:
        return ""
    status, body, headers = page
    if status == 304:
        keep_again(kept, headers)
        return kept.digest
    kind = "json" if "json" in headers.get("Content-Type", "") else "html"
    sha = digest(body)
    if kind == kept.kind and sha == kept.digest:
        keep_again(kept, headers)
    return sha


def digests_now(urls: list[str], readers: int = 8) -> dict[str, Future[str]]:
    """digest_now of each URL, `readers` at a time; a fresh kept page answers at once, without a
    request."""
    return at_once(urls, digest_now, readers, "sparkenv-page-check")


K = TypeVar("K")
V = TypeVar("V")


def at_once(keys: list[K], read: Callable[[K], V], readers: int, name: str) -> dict[K, Future[V]]:
    """read(key) for each key, `readers` at a time, so the connections are reused (sparkenv/index/fetch.py)
    rather than one opened per page all at once. Daemon threads: a lock stopped by a signal or an
    error does not wait for them to time out."""
    import threading

    out: dict[K, Future[V]] = {key: Future() for key in keys}
    todo = list(out.items())
    lock = threading.Lock()

    def work() -> None:
        while True:
            with lock:
                if not todo:
                    return
                key, fut = todo.pop(0)
            try:
                fut.set_result(read(key))
            except Exception as exc:  # handed to whoever reads the result
                fut.set_exception(exc)

    for n in range(min(readers, len(keys))):
        threading.Thread(target=work, daemon=True, name=f"{name}-{n}").start()
    return out


@dataclass(frozen=True)
class Policy:
    """What a response says of its own caching (RFC 9111, as a private cache reads it)."""

    store: bool
    lifetime: float
    no_cache: bool
    etag: str
    last_modified: str


def policy(headers: Mapping[str, str], now: float | None = None) -> Policy:
    """The caching a response's headers ask for. Freshness: `max-age` (a private cache: `s-maxage` is
    not for it), else `Expires` less `Date`; less `Age` (what a cache on the way already spent).
    Without either the page is stale at once: it is asked again (conditionally when it has a
    validator), as RFC 9111 asks of a cache that makes no heuristic guess."""
    control = ",".join(v for k, v in headers.items() if k.lower() == "cache-control")
    words = {w.strip().split("=", 1)[0].strip().lower() for w in control.split(",") if w.strip()}
    lifetime = 0.0
    m = _MAX_AGE.search(control)
    if m:
        lifetime = float(m.group(1))
    else:
        expires, date = _date(_header(headers, "Expires")), _date(_header(headers, "Date"))
        if date is None:
            date = time.time() if now is None else now
        if expires is not None:
            lifetime = max(0.0, expires - date)
    try:
        age = max(0.0, float(_header(headers, "Age") or 0))
    except ValueError:
        age = 0.0
    return Policy(
        store="no-store" not in words,
        lifetime=max(0.0, lifetime - age),
        no_cache="no-cache" in words,
        etag=_header(headers, "ETag"),
        last_modified=_header(headers, "Last-Modified"),
    )


def _header(headers: Mapping[str, str], name: str) -> str:
    want = name.lower()
    return next((str(v) for k, v in headers.items() if k.lower() == want), "")


def _date(value: str) -> float | None:
    if not value:
        return None
    import email.utils  # only where a response is read: a kept page is checked without it

    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return parsed.timestamp() if parsed.tzinfo else None
