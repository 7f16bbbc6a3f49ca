"""index/fetch.py: one TLS context for all of sparkenv's requests, made the way urlopen makes its own,
so a CA the user trusts through SSL_CERT_FILE is trusted, and an untrusted certificate is refused as
before. A real HTTPS server on 127.0.0.1 with a certificate made by openssl here."""

from __future__ import annotations

import os
import shutil
import ssl
import subprocess
import sys
import threading
import time
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest
from timing import assert_kept, timed

# the certificate is made by the openssl command (no Python library to make one is a dependency); CI
# (SPARKENV_REQUIRE_DOCKER=1) installs it, so there a missing openssl fails instead of skipping
pytestmark = pytest.mark.skipif(
    shutil.which("openssl") is None and os.environ.get("SPARKENV_REQUIRE_DOCKER") != "1",
    reason="needs the openssl command to make a certificate (apt-get install openssl)",
)

_ASK = (
    "import sys, urllib.error; from sparkenv.index import fetch\n"
    "try:\n"
    "    for _ in range(3): print(fetch.urlopen(sys.argv[1], 10).read().decode())\n"
    "except urllib.error.URLError as exc: print('refused', exc.reason); sys.exit(1)\n"
)


@pytest.fixture
def https(tmp_path):
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    (tmp_path / "www").mkdir()
    (tmp_path / "www" / "page").write_text("served over TLS")

    class Quiet(SimpleHTTPRequestHandler):
        def __init__(self, *a, **k):  # type: ignore[no-untyped-def]
            super().__init__(*a, directory=str(tmp_path / "www"), **k)

        def log_message(self, *a):  # type: ignore[no-untyped-def]
            pass

        def do_GET(self) -> None:
            if self.path != "/drip":
                return super().do_GET()
            body = b"x" * 200  # a byte every 0.2 s: each read of the client's is answered in time
            head = f"HTTP/1.0 200 OK\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            try:
                for i in range(len(head + body)):
                    self.wfile.write((head + body)[i : i + 1])
                    self.wfile.flush()
                    time.sleep(0.2)
            except OSError:
                pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"https://127.0.0.1:{server.server_address[1]}/page", cert
    server.shutdown()


def _ask(url: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _ASK, url], capture_output=True, text=True, timeout=60, env=env
    )


def test_a_ca_trusted_through_ssl_cert_file_serves_every_request(https):
    url, cert = https
    got = _ask(url, {**os.environ, "SSL_CERT_FILE": str(cert)})
    assert got.returncode == 0, got.stdout + got.stderr
    assert got.stdout.splitlines() == ["served over TLS"] * 3  # one context, three requests


def test_an_untrusted_certificate_is_refused(https):
    url, _ = https
    env = {k: v for k, v in os.environ.items() if k != "SSL_CERT_FILE"}
    got = _ask(url, env)
    assert got.returncode == 1 and "CERTIFICATE_VERIFY_FAILED" in got.stdout, got.stdout + got.stderr


# --- connections kept open (HTTP/1.1 keep-alive) ---------------------------------------------------


class _Counted(SimpleHTTPRequestHandler):
    """Counts the connections it is given; HTTP/1.1, so a connection serves requests until closed."""

    protocol_version = "HTTP/1.1"
    connections: list[int]
    drop_after_each = False  # close the connection after each answer without saying so (an idle drop)

    def setup(self) -> None:
        super().setup()
        self.connections.append(1)

    def log_message(self, *a):  # type: ignore[no-untyped-def]
        pass

    def do_GET(self) -> None:
        super().do_GET()
        if self.drop_after_each:
            self.close_connection = True


@pytest.fixture
def plain_server(tmp_path):
    from sparkenv.index import fetch

    (tmp_path / "page").write_text("kept open")
    (tmp_path / "big").write_bytes(bytes(range(256)) * 4096)
    servers = []

    def start(protocol: str = "HTTP/1.1", drop: bool = False) -> tuple[str, list[int]]:
        counted: list[int] = []
        handler = type(
            "H", (_Counted,), {"connections": counted, "protocol_version": protocol, "drop_after_each": drop}
        )
        server = ThreadingHTTPServer(
            ("127.0.0.1", 0),
            lambda *a: handler(*a, directory=str(tmp_path)),  # type: ignore[misc]
        )
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}", counted

    yield start
    fetch.close_idle()
    for server in servers:
        server.shutdown()
        server.server_close()


def test_requests_to_one_host_share_a_connection(plain_server):
    from sparkenv.index import fetch

    url, connections = plain_server()
    got = [fetch.urlopen(f"{url}/page", 10).read() for _ in range(5)]
    assert got == [b"kept open"] * 5
    assert len(connections) == 1


def test_a_server_that_closes_after_each_answer_is_served_on_new_connections(plain_server):
    from sparkenv.index import fetch

    url, connections = plain_server(protocol="HTTP/1.0")  # it says so: Connection: close
    assert [fetch.urlopen(f"{url}/page", 10).read() for _ in range(3)] == [b"kept open"] * 3
    assert len(connections) == 3


def test_a_connection_the_server_dropped_while_idle_is_replaced_and_the_request_answered(plain_server):
    from sparkenv.index import fetch

    url, connections = plain_server(drop=True)  # drops it without a word: the client finds out on use
    assert [fetch.urlopen(f"{url}/page", 10).read() for _ in range(3)] == [b"kept open"] * 3
    assert len(connections) == 3


def test_a_response_closed_before_its_end_does_not_leave_its_bytes_to_the_next_request(plain_server):
    from sparkenv.index import fetch

    url, connections = plain_server()
    with fetch.urlopen(f"{url}/big", 10) as resp:
        assert resp.read(10) == bytes(range(10))
    with fetch.urlopen(f"{url}/page", 10) as resp:
        assert resp.read() == b"kept open"  # not the rest of /big
    with fetch.urlopen(f"{url}/page", 10) as resp:
        assert resp.read() == b"kept open"
    assert len(connections) == 2  # the cut one was closed; the whole one was kept


def test_a_missing_file_is_an_http_error_and_the_connection_still_serves(plain_server):
    import urllib.error

    from sparkenv.index import fetch

    url, _ = plain_server()
    with pytest.raises(urllib.error.HTTPError) as err:
        fetch.urlopen(f"{url}/absent", 10)
    assert err.value.code == 404
    assert fetch.urlopen(f"{url}/page", 10).read() == b"kept open"


# --- a deadline for the whole of a request (index/deadline.py) ----------------------------------------

_DRIPPED = (
    "import sys, time; from sparkenv.index import fetch\n"
    "started = time.monotonic()\n"
    "try:\n"
    "    fetch.urlopen(sys.argv[1], 1.5).read(); print('read whole')\n"
    "except TimeoutError as exc: print(f'cut after {time.monotonic() - started:.3f} s:', exc)\n"
    "started = time.monotonic()\n"
    "print(fetch.urlopen(sys.argv[2], 10).read().decode())\n"
    "print(f'{time.monotonic() - started:.3f}')\n"
)


def test_a_tls_answer_that_drips_is_cut_at_its_deadline(https):
    """A server that sends a byte every 0.2 s answers every read within any socket timeout: the request
    is cut at its deadline all the same (the socket under TLS is shut down), the next one is served."""
    url, cert = https
    env = {**os.environ, "SSL_CERT_FILE": str(cert)}
    got = subprocess.run(
        [sys.executable, "-c", _DRIPPED, url.replace("/page", "/drip"), url],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert got.returncode == 0, got.stdout + got.stderr
    cut, served, baseline = got.stdout.splitlines()
    seconds = float(cut.split()[2])
    assert seconds >= 1.4, cut
    # the same process's next request to that server, answered at once, is this machine's pace
    assert_kept(seconds, promised=1.5, baseline=float(baseline), what="a dripping TLS answer")
    assert cut.endswith("the package index did not answer within 1.5 s (the request's own timeout)"), cut
    assert served == "served over TLS"


def test_a_page_that_drips_is_unreadable_by_its_deadline_not_by_its_end(tmp_path):
    """sparkenv's own page read (index/pages.py) from an index whose pages drip: None (cannot be read,
    as any unreachable page) within the request's deadline; the file beside it is served on."""
    from artifacts import Index, serve

    from sparkenv.index import fetch, pages

    ix = Index(tmp_path / "index")
    fname = ix.wheel("tinypkg", "1.0")
    server = serve(ix, drip="/simple/tinypkg/", drip_s=0.2)
    try:
        page, elapsed = timed(lambda: pages.get(ix.url + "tinypkg/", 1.0, {}))
        assert page is None
        files = ix.url.removesuffix("simple/") + "files/"

        def whole_file() -> bytes:
            with fetch.urlopen(files + fname, 10) as resp:
                return resp.read()

        served, baseline = timed(whole_file)  # a request the same server answers at once: this machine's pace
        assert served == (ix.root / "files" / fname).read_bytes()
        assert_kept(elapsed, promised=1.0, baseline=baseline, what="a page read from an index that drips")
    finally:
        fetch.close_idle()
        server.shutdown()
        server.server_close()
