"""PEP 691 JSON index pages (lock/fallbacks.py): the newest final releases, one release asked for by
version, yanked files left out, file URLs joined as urljoin joins them. A page served over loopback HTTP
with the JSON content type, laid out as a large index lays its pages out (a nested object before each
"filename", PEP 700 versions and upload times, a yanked file)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from sparkenv.index import fetch
from sparkenv.lock import fallbacks

JSON_TYPE = "application/vnd.pypi.simple.v1+json"


def _file(name: str, sha: str, uploaded: str, yanked: bool = False, rp: str = ">=3.9") -> dict:
    return {
        "core-metadata": {"sha256": "b" * 64},  # a nested object before the file's name
        "data-dist-info-metadata": {"sha256": "b" * 64},
        "filename": name,
        "hashes": {"sha256": sha},
        "requires-python": rp,
        "size": 1234,
        "upload-time": uploaded,
        "url": f"../../files/{name}",
        "yanked": yanked,
    }


def _page(extra: list[dict] | None = None) -> dict:
    files = [
        _file("demo-1.0-py3-none-any.whl", "1" * 64, "2024-01-01T00:00:00Z"),
        _file("demo-1.0.tar.gz", "2" * 64, "2024-01-01T00:00:01Z"),
        _file("demo-1.0.1-py3-none-any.whl", "3" * 64, "2024-02-01T00:00:00Z"),  # "1.0" is in its name too
        _file("demo-2.0-cp312-cp312-manylinux_2_28_aarch64.whl", "4" * 64, "2025-01-01T00:00:00Z"),
        _file(
            "demo-2.0-cp312-cp312-manylinux2014_aarch64.whl", "5" * 64, "2025-01-01T00:00:00Z", yanked=True
        ),
        _file("demo-3.0-py3-none-any.whl", "6" * 64, "2026-01-01T00:00:00Z", rp=">=3.10"),
        _file("demo-4.0rc1-py3-none-any.whl", "7" * 64, "2026-06-01T00:00:00Z"),
        *(extra or []),
    ]
    return {
        "meta": {"api-version": "1.1"},
        "name": "demo",
        "files": files,
        "versions": ["1.0", "1.0.1", "2.0", "3.0", "4.0rc1"],
    }


@pytest.fixture
def index():
    pages: dict[str, bytes] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = pages.get(self.path)
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", JSON_TYPE)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):  # type: ignore[no-untyped-def]
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    def serve(page: dict, indent: int | None = None) -> str:
        pages["/simple/demo/"] = json.dumps(page, indent=indent).encode()
        return f"http://127.0.0.1:{server.server_address[1]}/simple/"

    yield serve
    fetch.close_idle()
    server.shutdown()
    server.server_close()


def _versions(found: dict | None) -> list[str]:
    assert found is not None
    return sorted(str(v) for v in found)


@pytest.mark.parametrize("indent", [None, 1])
def test_a_page_gives_its_newest_final_releases_and_the_one_asked_for(index, indent):
    url = index(_page(), indent)
    assert _versions(fallbacks.releases(url, "demo")) == ["1.0.1", "2.0", "3.0"]  # 4.0rc1 is no final
    one = fallbacks.release(url, "demo", "1.0")
    assert one is not None and one.files == ["demo-1.0-py3-none-any.whl", "demo-1.0.tar.gz"]
    assert one.sha256 == {"demo-1.0-py3-none-any.whl": "1" * 64, "demo-1.0.tar.gz": "2" * 64}
    assert (
        one.urls["demo-1.0.tar.gz"].endswith("/files/demo-1.0.tar.gz")
        and "/../" not in one.urls["demo-1.0.tar.gz"]
    )
    two = fallbacks.release(url, "demo", "2.0")  # its yanked manylinux2014 wheel left out
    assert two is not None and two.files == ["demo-2.0-cp312-cp312-manylinux_2_28_aarch64.whl"]


def test_a_file_name_with_an_escape_is_read(index):
    odd = _file('demo-1.0-py3-none-"odd".whl', "8" * 64, "2024-01-01T00:00:00Z")  # an escaped quote
    url = index(_page([odd]))
    one = fallbacks.release(url, "demo", "1.0")
    assert one is not None and 'demo-1.0-py3-none-"odd".whl' in one.files


def test_a_page_of_absolute_urls_gives_each_file_its_url(index):
    """As a large index serves them: every file by an absolute URL that holds its name, a yanked reason
    with an escape."""
    page = _page()
    for f in page["files"]:
        f["url"] = f"https://127.0.0.1:1/packages/ab/cd/{f['filename']}#sha256={f['hashes']['sha256']}"
    page["files"][4]["yanked"] = 'broken "wheel"'
    url = index(page)
    assert _versions(fallbacks.releases(url, "demo")) == ["1.0.1", "2.0", "3.0"]
    one = fallbacks.release(url, "demo", "1.0")
    assert (
        one is not None
        and one.urls["demo-1.0.tar.gz"] == "https://127.0.0.1:1/packages/ab/cd/demo-1.0.tar.gz"
    )


@pytest.mark.parametrize(
    "href",
    [
        "https://127.0.0.1:1/packages/ab/demo-1.0-py3-none-any.whl",
        "https://127.0.0.1:1/packages/ab/demo-1.0-py3-none-any.whl#sha256=00",
        "http://127.0.0.1:1/packages/demo-1.0.tar.gz",
        "HTTPS://127.0.0.1:1/packages/demo-1.0.tar.gz",
        "https://127.0.0.1:1/a/../b/./demo-1.0.tar.gz",
        "https://127.0.0.1:1/packages/demo-1.0.tar.gz?x=1",
        "https://127.0.0.1:1/packages/demo-1.0.tar.gz?",
        "https://127.0.0.1:1/packages/demo;v=1.tar.gz",
        "https://[::1]:1/packages/demo-1.0.tar.gz",
        "https://user@127.0.0.1:1//double//demo-1.0.tar.gz",
        "../../files/demo-1.0.tar.gz",
        "/files/demo-1.0.tar.gz",
        "//127.0.0.1:2/files/demo-1.0.tar.gz",
        "demo-1.0.tar.gz#sha256=00",
        "",
    ],
)
def test_a_file_url_is_what_urljoin_gives(href):
    import urllib.parse

    for base in ("https://127.0.0.1:1/simple/demo/", "http://127.0.0.1:1/simple/demo/"):
        expected = urllib.parse.urljoin(base, href).split("#", 1)[0] if href else ""
        assert fallbacks._join(base, href) == expected


def test_newest_versions_that_share_a_prefix_are_told_apart(index):
    """1.10.3, 1.10.2 and 1.10.1 are the newest finals; 1.1.0 holds part of their names and is older."""
    files = [
        _file(f"demo-{v}-py3-none-any.whl", str(i) * 64, f"2025-0{i}-01T00:00:00Z")
        for i, v in enumerate(["1.1.0", "1.10.1", "1.10.2", "1.10.3", "1.10.10rc1"], start=1)
    ]
    page = {"meta": {"api-version": "1.1"}, "name": "demo", "files": files}
    page["versions"] = ["1.1.0", "1.10.1", "1.10.2", "1.10.3", "1.10.10rc1"]
    url = index(page)
    got = fallbacks.releases(url, "demo")
    assert got is not None and {"1.10.1", "1.10.2", "1.10.3"} <= set(_versions(got))
    assert "1.1.0" not in _versions(got)
