"""Real packaging artifacts for the tests, each made by one builder here: the files of a dist-info
folder (METADATA, WHEEL, INSTALLER, RECORD), wheels (real zip files whose RECORD has the sha256 and size
of every member), sdists (a real tar.gz with static PKG-INFO 2.2 and a pyproject.toml), and PEP 503
indexes served by http.server on 127.0.0.1 and an ephemeral port, with PEP 658 `.metadata` files beside
the wheels, so uv and pip resolve against them exactly as against a real index.

Users: the resolver tests (`Index`, `serve`), the build tests (`write_wheel`, `serve_index`, `file_url`,
`dist_info` for the stand-in base's installed packages), the audit's pip-check tests (`write_wheel`) and
conftest's installed environments (`dist_info`).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import html
import io
import json
import re
import shutil
import signal
import tarfile
import tempfile
import threading
import time
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from packaging.utils import canonicalize_name

# --- dist-info: what a wheel carries and an installer leaves --------------------------------------------


def _b64(digest: bytes) -> str:
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def metadata_text(
    name: str,
    version: str,
    requires: Iterable[str] = (),
    extras: Iterable[str] = (),
    metadata_version: str = "2.2",
    requires_python: str | None = ">=3.9",
) -> str:
    lines = [f"Metadata-Version: {metadata_version}", f"Name: {name}", f"Version: {version}"]
    lines += [f"Requires-Python: {requires_python}"] if requires_python else []
    lines += [f"Provides-Extra: {e}" for e in extras]
    lines += [f"Requires-Dist: {r}" for r in requires]
    return "\n".join(lines) + "\n\n"


def wheel_text(tag: str = "py3-none-any", purelib: bool | None = None) -> str:
    pure = tag.endswith("-none-any") if purelib is None else purelib
    return (
        f"Wheel-Version: 1.0\nGenerator: sparkenv-tests\nRoot-Is-Purelib: {str(pure).lower()}\nTag: {tag}\n\n"
    )


def record(files: Mapping[str, bytes], info: str, hashed: bool = True) -> bytes:
    """RECORD for `files` (paths relative to the site folder) and itself; `hashed=False` leaves hash and
    size empty, as some installers do."""
    rows = [
        f"{p},sha256={_b64(hashlib.sha256(b).digest())},{len(b)}" if hashed else f"{p},,"
        for p, b in files.items()
    ]
    rows.append(f"{info}/RECORD,,")
    return ("\n".join(rows) + "\n").encode()


def dist_info(
    name: str,
    version: str,
    requires: Iterable[str] = (),
    files: Mapping[str, bytes] | None = None,
    *,
    tag: str = "py3-none-any",
    purelib: bool | None = None,
    extras: Iterable[str] = (),
    installer: str | None = "pip",
    direct_url: dict | None = None,
    metadata_version: str = "2.1",
    requires_python: str | None = None,
    hashed: bool = True,
    with_record: bool = True,
) -> dict[str, bytes]:
    """`files` plus the dist-info folder of `name` `version` (a RECORD listing all of them): the members
    of a wheel (installer=None) or what an installer leaves in the site folder."""
    info = f"{name.replace('-', '_')}-{version}.dist-info"
    out = dict(files or {})
    out[f"{info}/METADATA"] = metadata_text(
        name, version, requires, extras, metadata_version, requires_python
    ).encode()
    if installer:
        out[f"{info}/INSTALLER"] = f"{installer}\n".encode()
    out[f"{info}/WHEEL"] = wheel_text(tag, purelib).encode()
    if direct_url is not None:
        out[f"{info}/direct_url.json"] = json.dumps(direct_url).encode()
    if with_record:
        out[f"{info}/RECORD"] = record(out, info, hashed)
    return out


# --- wheels and sdists ----------------------------------------------------------------------------------


def wheel_name(name: str, version: str, tag: str = "py3-none-any") -> str:
    return f"{name.replace('-', '_')}-{version}-{tag}.whl"


def wheel_bytes(members: Mapping[str, bytes]) -> bytes:
    """A zip of `members`, reproducible (fixed dates), ZIP64 end records past 65,535 members."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, allowZip64=True) as zf:
        for path, data in members.items():
            zf.writestr(zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0)), data, zipfile.ZIP_DEFLATED)
    return buf.getvalue()


def write_wheel(
    folder: Path,
    name: str,
    version: str,
    modules: Mapping[str, str | bytes] | None = None,
    requires: Iterable[str] = (),
    extras: Iterable[str] = (),
    tag: str = "py3-none-any",
    metadata_version: str = "2.1",
    requires_python: str | None = None,
) -> Path:
    """A real wheel in `folder`: `modules` (default: one package __init__ with its VERSION) and its
    dist-info, Requires-Dist and Provides-Extra lines included."""
    mod = name.replace("-", "_")
    files = {
        k: v if isinstance(v, bytes) else v.encode()
        for k, v in (modules or {f"{mod}/__init__.py": f"VERSION = {version!r}\n"}).items()
    }
    members = dist_info(
        name,
        version,
        requires,
        files,
        tag=tag,
        extras=extras,
        installer=None,
        metadata_version=metadata_version,
        requires_python=requires_python,
    )
    path = folder / wheel_name(name, version, tag)
    path.write_bytes(wheel_bytes(members))
    return path


def sdist_bytes(
    name: str,
    version: str,
    requires: Iterable[str] = (),
    files: Mapping[str, str] | None = None,
    metadata_version: str = "2.2",
) -> bytes:
    """A real sdist. With the default metadata 2.2 (static) a resolver needs no build to read it; with
    "2.1" it must run the build backend. `files` adds or replaces members (setup.py, CMakeLists.txt,
    csrc/kernel.cu, a pyproject.toml with its own build-system …), paths relative to the top folder."""
    requires = list(requires)
    dist = name.replace("-", "_")
    stem = f"{dist}-{version}"
    deps = ", ".join(f'"{r}"' for r in requires)
    members = {
        "PKG-INFO": metadata_text(name, version, requires, metadata_version=metadata_version),
        "pyproject.toml": (
            '[build-system]\nrequires = ["setuptools>=68"]\nbuild-backend = "setuptools.build_meta"\n'
            f'[project]\nname = "{name}"\nversion = "{version}"\ndependencies = [{deps}]\n'
        ),
        "setup.py": "from setuptools import setup\n\nsetup()\n",
        f"{dist}/__init__.py": "",
        **(files or {}),
    }
    return tar_gz(stem, members)


def tar_gz(top: str, members: Mapping[str, str]) -> bytes:
    """A gzipped tar of `members` (path relative to `top` -> text), in the mapping's order."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for rel, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{top}/{rel}")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


# --- a PEP 503 index, served on loopback ----------------------------------------------------------------


class Index:
    """A folder laid out as a PEP 503 simple index: simple/<name>/index.html + files/<file>."""

    def __init__(self, root: Path, pep658: bool = True) -> None:
        self.root = root
        self.pep658 = pep658  # serve `.metadata` files beside the wheels (PEP 658)
        (root / "files").mkdir(parents=True, exist_ok=True)
        self.url = ""  # set by serve()
        self._files: dict[str, list[str]] = {}

    def wheel(
        self,
        name: str,
        version: str,
        tag: str = "py3-none-any",
        requires: list[str] | tuple[str, ...] = (),
        files: dict[str, bytes] | None = None,
        zip64: bool = False,
    ) -> str:
        """Build a real wheel; returns its file name. `files` adds members (many of them make a central
        directory larger than 64 KiB); `zip64` writes ZIP64 end records (65,536 members and more)."""
        dist = name.replace("-", "_")
        members = dist_info(
            name,
            version,
            requires,
            {f"{dist}/__init__.py": f"__version__ = {version!r}\n".encode(), **(files or {})},
            tag=tag,
            installer=None,
            metadata_version="2.2",
            requires_python=">=3.9",
        )
        data = wheel_bytes(members)
        if zip64:  # zipfile writes ZIP64 end records only past 65,535 members: make sure they are there
            assert b"PK\x06\x06" in data[-200_000:], "no ZIP64 end of central directory record"
        fname = wheel_name(name, version, tag)
        (self.root / "files" / fname).write_bytes(data)
        if self.pep658:
            (self.root / "files" / f"{fname}.metadata").write_bytes(
                members[f"{dist}-{version}.dist-info/METADATA"]
            )
        self._add(name, fname)
        return fname

    def sdist(
        self,
        name: str,
        version: str,
        requires: list[str] | tuple[str, ...] = (),
        files: Mapping[str, str] | None = None,
        metadata_version: str = "2.2",
    ) -> str:
        fname = f"{name.replace('-', '_')}-{version}.tar.gz"
        data = sdist_bytes(name, version, requires, files, metadata_version)
        (self.root / "files" / fname).write_bytes(data)
        self._add(name, fname)
        return fname

    def add(self, path: Path) -> str:
        """An existing wheel or sdist file, served under the project its file name says."""
        shutil.copyfile(path, self.root / "files" / path.name)
        self._add(path.name.split("-")[0], path.name)
        return path.name

    def _add(self, name: str, fname: str) -> None:
        key = canonicalize_name(name)
        self._files.setdefault(key, []).append(fname)
        self._write_page(key)

    def _write_page(self, key: str) -> None:
        page = self.root / "simple" / key
        page.mkdir(parents=True, exist_ok=True)
        links = []
        for fname in self._files[key]:
            data = (self.root / "files" / fname).read_bytes()
            href = f"../../files/{fname}#sha256={hashlib.sha256(data).hexdigest()}"
            meta = self.root / "files" / f"{fname}.metadata"
            attr = ""
            if meta.exists():
                attr = f' data-dist-info-metadata="sha256={hashlib.sha256(meta.read_bytes()).hexdigest()}"'
                attr += attr.replace("data-dist-info-metadata", "data-core-metadata")
            links.append(f'<a href="{html.escape(href)}"{attr}>{html.escape(fname)}</a><br/>')
        (page / "index.html").write_text(
            "<!DOCTYPE html><html><body>\n" + "\n".join(links) + "\n</body></html>\n"
        )
        root_links = "".join(f'<a href="{k}/">{k}</a><br/>' for k in sorted(self._files))
        (self.root / "simple" / "index.html").write_text(f"<html><body>{root_links}</body></html>\n")


def file_url(index_url: str, fname: str) -> str:
    """Where an Index served at `index_url` (its simple/ URL) serves the file `fname`."""
    return f"{index_url.rstrip('/').removesuffix('/simple')}/files/{fname}"


class _QuietHandler(SimpleHTTPRequestHandler):
    """http.server as is: no range support (a Range header is ignored, the whole file comes back)."""

    requests: list[tuple[str, str]]  # (path, Range header) of every GET, for the tests to read
    refuse_agent = ""  # a User-Agent prefix answered with 503 for files (a client-specific outage)
    delay = 0.0  # seconds every request waits (a slow mirror)
    auth = ""  # "user:password": every request without that HTTP basic auth gets 401 (a private index)
    drip = ""  # requests whose path ends so are answered one byte at a time, `drip_s` apart
    drip_s = 1.0

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.requests.append((self.path, self.headers.get("Range", "")))
        time.sleep(self.delay)
        if self.drip and self.path.endswith(self.drip):
            self._dripped()
            return
        if self._unauthorized() or self._refused():
            return
        self._answer()

    def _dripped(self) -> None:
        """The whole answer (status line, headers, body) made first, then sent a byte at a time: every
        read of the client's gets a byte within any socket timeout, and the answer never ends in time."""
        real, self.wfile = self.wfile, io.BytesIO()
        self.close_connection = True
        self._answer()
        answer, self.wfile = self.wfile.getvalue(), real
        try:
            for i in range(len(answer)):
                real.write(answer[i : i + 1])
                real.flush()
                time.sleep(self.drip_s)
        except OSError:  # the client gave up: what it is meant to do
            pass

    def _answer(self) -> None:
        SimpleHTTPRequestHandler.do_GET(self)

    def _unauthorized(self) -> bool:
        if not self.auth:
            return False
        wanted = "Basic " + base64.b64encode(self.auth.encode()).decode()
        if self.headers.get("Authorization", "") == wanted:
            return False
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="sparkenv-test"')
        self.send_header("Content-Length", "0")
        self.end_headers()
        return True

    def _refused(self) -> bool:
        agent = self.headers.get("User-Agent", "")
        if self.refuse_agent and agent.startswith(self.refuse_agent) and "/files/" in self.path:
            self.send_error(503, "unavailable for this client")
            return True
        return False


_RANGE = re.compile(r"bytes=(\d*)-(\d*)$")


class _RangeHandler(_QuietHandler):
    """Answers single byte ranges (RFC 9110) with 206, as PyPI's file host does."""

    def _answer(self) -> None:
        m = _RANGE.match(self.headers.get("Range", ""))
        path = Path(self.translate_path(self.path))
        if not m or not path.is_file():
            return SimpleHTTPRequestHandler.do_GET(self)
        size = path.stat().st_size
        if m.group(1):
            start, end = int(m.group(1)), int(m.group(2)) if m.group(2) else size - 1
        else:
            start, end = max(0, size - int(m.group(2))), size - 1
        end = min(end, size - 1)
        with path.open("rb") as fh:
            fh.seek(start)
            body = fh.read(end - start + 1)
        self.send_response(206)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        self.wfile.write(body)


def serve(
    index: Index,
    ranges: bool = False,
    refuse_agent: str = "",
    delay: float = 0.0,
    auth: str = "",
    drip: str = "",
    drip_s: float = 1.0,
) -> ThreadingHTTPServer:
    """Serve the index on 127.0.0.1 and an ephemeral port; sets index.url to its simple/ URL.
    `ranges`: answer range requests (206); without it the server always sends whole files.
    `refuse_agent`: answer 503 for files to clients whose User-Agent starts with it (stages an outage
    that hits one client only). `delay`: every request waits that long. `auth` ("user:password"): HTTP
    basic auth is required for every request, as a private index does. `drip`: requests whose path holds
    `drip` are answered a byte every `drip_s` seconds (an index that never quite stalls). The server's
    `requests` lists every GET."""
    handler = type(
        "Handler",
        (_RangeHandler if ranges else _QuietHandler,),
        {
            "requests": [],
            "refuse_agent": refuse_agent,
            "delay": delay,
            "auth": auth,
            "drip": drip,
            "drip_s": drip_s,
        },
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(handler, directory=str(index.root)))
    server.requests = handler.requests  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    index.url = f"http://127.0.0.1:{server.server_address[1]}/simple/"
    return server


@contextlib.contextmanager
def serve_index(files: list[Path], delay: float = 0.0) -> Iterator[str]:
    """An index of these wheel (or sdist) files over HTTP on 127.0.0.1; yields its simple/ URL (no trailing
    slash), closed and removed on exit. `delay` makes every request wait that long (a slow mirror: a
    build step that is still running when we need it)."""
    root = Path(tempfile.mkdtemp(prefix="sparkenv-index-"))
    index = Index(root, pep658=False)
    for f in files:
        index.add(f)
    server = serve(index, delay=delay)
    try:
        yield index.url.rstrip("/")
    finally:
        server.shutdown()
        server.server_close()
        shutil.rmtree(root, ignore_errors=True)


def platform_args(machine: str, glibc_minor: int = 39) -> list[str]:
    """pip download does not expand manylinux tags below the one named (FACTS.md): name each one."""
    out = []
    for minor in range(glibc_minor, 16, -1):
        out += ["--platform", f"manylinux_2_{minor}_{machine}"]
    return out


def default_dispositions() -> None:
    """preexec_fn for a sparkenv started as from a terminal: SIGINT and SIGHUP at their defaults. Under
    `nohup` (or a CI runner that ignores SIGHUP) the child would inherit the ignore, and sparkenv keeps an
    inherited ignore on purpose (sparkenv/core/signals.py), so a test that sends SIGHUP must reset it."""
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


def stranger_project(root: Path, secret: str) -> Path:
    """A stranger's project (pyproject.toml, lockfiles/ with the shipped lock and its input) at
    root/work/proj, with `secret` written in root/secret.txt, outside it: for path-confinement tests."""
    shipped = Path(__file__).resolve().parents[1] / "lockfiles"
    root.mkdir(parents=True, exist_ok=True)
    (root / "secret.txt").write_text(secret)
    proj = root / "work" / "proj"
    (proj / "lockfiles" / "inputs").mkdir(parents=True)
    (proj / "pyproject.toml").write_text('[project]\nname = "x"\n')
    for name in ("pylock.ngc-25-11.toml", "requirements.ngc-25-11.txt"):
        shutil.copy(shipped / name, proj / "lockfiles" / name)
    shutil.copy(shipped / "inputs" / "playbook-unsloth.txt", proj / "lockfiles" / "inputs")
    return proj
