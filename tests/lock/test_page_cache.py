"""What sparkenv keeps of the index pages it reads (index/pages.py, through fallbacks.releases),
against a real index over loopback HTTP that says how long its pages are fresh and answers conditional
requests: a fresh page is not asked for again, a stale one is revalidated (304: taken as kept; 200: what
changed shows up in the old-fallback verdict), a damaged file is not trusted and is rewritten, and no
credential is written."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from packaging.version import Version

from sparkenv.environment import profiles
from sparkenv.index import credentials, fetch
from sparkenv.index import pages as page_cache
from sparkenv.lock import fallbacks

JSON_TYPE = "application/vnd.pypi.simple.v1+json"


def _file(name: str, uploaded: str) -> dict:
    return {
        "filename": name,
        "hashes": {"sha256": name.encode().hex()[:64].ljust(64, "0")},
        "requires-python": ">=3.9",
        "upload-time": uploaded,
        "url": f"../../files/{name}",
        "yanked": False,
    }


def _page(*releases: tuple[str, str]) -> bytes:
    files = [_file(f"demo-{v}-py3-none-any.whl", when) for v, when in releases]
    versions = [v for v, _ in releases]
    page = {"meta": {"api-version": "1.1"}, "name": "demo", "files": files, "versions": versions}
    return json.dumps(page).encode()


OLD = _page(("1.0", "2023-01-01T00:00:00Z"), ("2.0", "2024-01-01T00:00:00Z"))
NEW = _page(("1.0", "2023-01-01T00:00:00Z"), ("2.0", "2024-01-01T00:00:00Z"), ("3.0", "2026-06-01T00:00:00Z"))


class Index:
    """One project's page, its caching headers, and every request it was asked (path, conditional
    headers, status answered)."""

    def __init__(self) -> None:
        self.body = OLD
        self.etag = '"v1"'
        self.cache_control = "max-age=600, public"
        self.auth = ""  # "user:password" the index wants (401 without it)
        self.gzip = False  # compress the page for a client that accepts gzip
        self.sent: list[int] = []  # the bytes of each page body sent
        self.seen: list[tuple[str, str, int, str]] = []  # (path, If-None-Match, status, Authorization)

    def answer(self, handler: BaseHTTPRequestHandler) -> None:
        got_auth = handler.headers.get("Authorization", "")
        if self.auth and got_auth != "Basic " + base64.b64encode(self.auth.encode()).decode():
            status = 401
        elif handler.path != "/simple/demo/":
            status = 404
        elif self.etag and handler.headers.get("If-None-Match") == self.etag:
            status = 304
        else:
            status = 200
        self.seen.append((handler.path, handler.headers.get("If-None-Match", ""), status, got_auth))
        handler.send_response(status)
        if status in (200, 304):
            if self.cache_control:
                handler.send_header("Cache-Control", self.cache_control)
            if self.etag:
                handler.send_header("ETag", self.etag)
        if status == 200:
            body = self.body
            handler.send_header("Content-Type", JSON_TYPE)
            if self.gzip and "gzip" in handler.headers.get("Accept-Encoding", ""):
                body = gzip.compress(body) if isinstance(self.gzip, bool) else self.gzip
                handler.send_header("Content-Encoding", "gzip")
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)
            self.sent.append(len(body))
        else:
            handler.send_header("Content-Length", "0")
            handler.end_headers()

    def statuses(self) -> list[int]:
        """What the page was answered (the verdict's digging for reasons asks for files too: 404)."""
        return [status for path, _, status, _ in self.seen if path == "/simple/demo/"]


@pytest.fixture
def index(monkeypatch, tmp_path):
    monkeypatch.setenv("SPARKENV_CACHE_DIR", str(tmp_path / "sp"))
    state = Index()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: a 304 hands its connection back, as a real index's

        def do_GET(self) -> None:
            state.answer(self)

        def log_message(self, *a):  # type: ignore[no-untyped-def]
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/simple/"  # type: ignore[attr-defined]
    yield state
    fetch.close_idle()
    server.shutdown()
    server.server_close()


def _versions(got: dict | None) -> list[str]:
    assert got is not None
    return sorted(str(v) for v in got)


def _verdict(url: str):  # type: ignore[no-untyped-def]
    """The old-fallback facts of demo 1.0 locked (None: not older than the newest release)."""
    found = fallbacks.gather({"demo": ("1.0", None)}, {}, [], {}, profiles.load(None), url)
    return found[0] if found else None


def test_a_fresh_page_is_not_asked_for_again(index):
    first = fallbacks.releases(index.url, "demo")
    assert _versions(first) == ["1.0", "2.0"]
    again = fallbacks.releases(index.url, "demo")
    assert again == first  # the same releases, files, URLs, upload times and sha256
    assert index.statuses() == [200]  # fresh for 600 s: no second request


def test_a_stale_page_unchanged_is_revalidated_without_a_download(index):
    index.cache_control = "max-age=0"
    first = fallbacks.releases(index.url, "demo")
    again = fallbacks.releases(index.url, "demo")
    assert again == first
    assert index.statuses() == [200, 304]
    assert index.seen[1][1] == '"v1"'  # asked with the ETag it was given


def test_a_stale_page_that_changed_shows_its_new_release_in_the_verdict(index):
    index.cache_control = "max-age=0"
    facts = _verdict(index.url)
    assert facts is not None and facts.newest == "2.0"
    index.body, index.etag = NEW, '"v2"'  # a release since: the index's ETag changes with the page
    facts = _verdict(index.url)
    assert facts is not None and facts.newest == "3.0"
    assert index.statuses() == [200, 200]
    assert _versions(fallbacks.releases(index.url, "demo")) == ["1.0", "2.0", "3.0"]  # kept as it is now
    assert index.statuses() == [200, 200, 304]


def test_a_page_without_caching_headers_is_read_every_time(index):
    index.cache_control, index.etag = "", ""
    assert _versions(fallbacks.releases(index.url, "demo")) == ["1.0", "2.0"]
    index.body = NEW
    assert _versions(fallbacks.releases(index.url, "demo")) == ["1.0", "2.0", "3.0"]
    assert index.statuses() == [200, 200]


def test_no_store_keeps_nothing(index):
    index.cache_control = "no-store"
    fallbacks.releases(index.url, "demo")
    fallbacks.releases(index.url, "demo")
    assert index.statuses() == [200, 200]
    assert not list(page_cache.STORE.path("-").parent.glob("*"))


@pytest.mark.parametrize(
    "damage",
    [
        b"",  # cut short
        b"{not json",
        b'index-pages 1 00000000\n{"url": 1}',  # its checksum wrong
        None,  # a well-formed record whose releases are not releases
        "other-url",  # a well-formed record of another page
    ],
)
def test_a_damaged_file_is_not_trusted_and_is_rewritten(index, damage):
    index.body = NEW
    expected = fallbacks.releases(index.url, "demo")
    (path,) = page_cache.STORE.path("-").parent.glob("*")
    key = index.url + "demo/"
    assert page_cache.STORE.path(key) == path
    record = page_cache.STORE.load(key)
    if damage is None:
        record["data"] = [["3.0", None, "", ["x"], [], []]]
        page_cache.STORE.save(key, record)
    elif damage == "other-url":
        record["url"] = "http://127.0.0.1:1/simple/demo/"
        page_cache.STORE.save(key, record)
    else:
        path.write_bytes(damage)
    got = fallbacks.releases(index.url, "demo")
    assert got == expected
    assert index.statuses() == [200, 200]  # asked again, whole: the damaged file was not taken
    assert page_cache.STORE.load(key)["url"] == key  # and rewritten
    assert fallbacks.releases(index.url, "demo") == expected
    assert index.statuses() == [200, 200]  # fresh again


def test_no_credential_is_written(index, monkeypatch):
    index.auth = "alice:s3cret-token"
    secret_url = index.url.replace("http://", "http://alice:s3cret-token@")
    monkeypatch.setattr(credentials, "_given", {})  # what this test remembers is forgotten after it
    credentials.remember([secret_url])
    got = fallbacks.releases(secret_url, "demo")
    assert _versions(got) == ["1.0", "2.0"]
    assert index.seen[0][3].startswith("Basic ")  # the index was asked with the credential
    (path,) = page_cache.STORE.path("-").parent.glob("*")
    text = path.read_text()
    token = base64.b64encode(b"alice:s3cret-token").decode()
    assert "s3cret-token" not in text and "alice" not in text and token not in text
    again = fallbacks.releases(index.url, "demo")  # keyed without the user-info: the same page
    assert again is not None and got is not None
    assert {v: r.files for v, r in again.items()} == {v: r.files for v, r in got.items()}
    assert index.statuses() == [200]


def test_what_a_response_says_of_its_freshness():
    p = page_cache.policy({"Cache-Control": "max-age=600, public", "Age": "100", "ETag": '"x"'})
    assert (p.store, p.lifetime, p.no_cache, p.etag) == (True, 500.0, False, '"x"')
    p = page_cache.policy(
        {"Date": "Wed, 02 Dec 2026 10:00:00 GMT", "Expires": "Wed, 02 Dec 2026 10:05:00 GMT"}
    )
    assert p.lifetime == 300.0
    assert page_cache.policy({"Expires": "0"}).lifetime == 0.0  # an invalid date: already stale
    assert page_cache.policy({"cache-control": "no-cache, max-age=60"}).no_cache
    assert not page_cache.policy({"Cache-Control": "no-store"}).store
    assert page_cache.policy({"Cache-Control": "s-maxage=600"}).lifetime == 0.0  # for shared caches only
    kept = page_cache.Kept("u", 1000.0, 60.0, False, "", "", "json", "0" * 64, [])
    assert kept.fresh(1059.0) and not kept.fresh(1061.0) and not kept.fresh(999.0)


def test_the_kept_releases_are_the_releases(index):
    index.body = NEW
    got = fallbacks.releases(index.url, "demo")
    assert got is not None and got[Version("3.0")].uploaded is not None
    assert fallbacks._unkept(fallbacks._kept(got)) == got


def test_a_page_sent_gzipped_reads_as_the_page_and_keeps_its_digest(index):
    """An index compresses its pages when asked (a large project's pages are tens of MB of JSON): the
    releases and the page's sha256 (what a kept judgement rests on) are those of the page itself."""
    index.body = NEW
    index.gzip = True
    index.cache_control = "max-age=0"  # stale at once: the digest below is asked of the index again
    index.etag = ""
    got = fallbacks.releases(index.url, "demo")
    assert _versions(got) == ["1.0", "2.0", "3.0"]
    assert fallbacks.page_read(index.url, "demo")[1] == hashlib.sha256(NEW).hexdigest()
    assert page_cache.digest_now(index.url + "demo/") == hashlib.sha256(NEW).hexdigest()
    assert len(index.sent) == 2 and all(n < len(NEW) for n in index.sent)  # both came compressed


def test_a_page_in_several_gzip_members_is_the_members_one_after_the_other(index):
    index.body = NEW
    index.gzip = gzip.compress(NEW[:100]) + gzip.compress(NEW[100:])
    assert _versions(fallbacks.releases(index.url, "demo")) == ["1.0", "2.0", "3.0"]


@pytest.mark.parametrize(
    "damage",
    [gzip.compress(NEW)[:-20], gzip.compress(NEW) + b"trailing"],
    ids=["cut short", "bytes after it"],
)
def test_a_damaged_gzip_page_is_unreadable_not_guessed(index, damage):
    index.gzip = damage
    assert fallbacks.releases(index.url, "demo") is None
