"""Real parts for the resolver tests: small wheels and sdists built here, a PEP 503 index over HTTP.

The wheels are real zip files with a dist-info folder and a correct RECORD (sha256 + size of every file),
the sdist is a real tar.gz with PKG-INFO (metadata 2.2, nothing dynamic) and a pyproject.toml. The index
is served by http.server on 127.0.0.1 and an ephemeral port, with PEP 658 `.metadata` files beside the
wheels, so `uv pip compile` resolves against it exactly as against a real index.
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import re
import tarfile
import threading
import zipfile
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from packaging.utils import canonicalize_name


def _b64(digest: bytes) -> str:
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def metadata_text(name: str, version: str, requires: list[str] | tuple[str, ...] = ()) -> str:
    lines = ["Metadata-Version: 2.2", f"Name: {name}", f"Version: {version}", "Requires-Python: >=3.9"]
    lines += [f"Requires-Dist: {r}" for r in requires]
    return "\n".join(lines) + "\n\n"


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
        stem = f"{dist}-{version}"
        fname = f"{stem}-{tag}.whl"
        di = f"{stem}.dist-info"
        pure = tag.endswith("-none-any")
        contents: dict[str, bytes] = {f"{dist}/__init__.py": f"__version__ = {version!r}\n".encode()}
        contents.update(files or {})
        contents[f"{di}/METADATA"] = metadata_text(name, version, requires).encode()
        contents[f"{di}/WHEEL"] = (
            "Wheel-Version: 1.0\nGenerator: sparkenv-tests\nRoot-Is-Purelib: "
            f"{str(pure).lower()}\nTag: {tag}\n\n"
        ).encode()
        record = [f"{p},sha256={_b64(hashlib.sha256(b).digest())},{len(b)}" for p, b in contents.items()]
        record.append(f"{di}/RECORD,,")
        contents[f"{di}/RECORD"] = ("\n".join(record) + "\n").encode()
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, allowZip64=True) as zf:
            for p, b in contents.items():
                zf.writestr(p, b)
        data = buf.getvalue()
        if zip64:  # zipfile writes ZIP64 end records only past 65,535 members: make sure they are there
            assert b"PK\x06\x06" in data[-200_000:], "no ZIP64 end of central directory record"
        (self.root / "files" / fname).write_bytes(data)
        if self.pep658:
            (self.root / "files" / f"{fname}.metadata").write_bytes(contents[f"{di}/METADATA"])
        self._add(name, fname)
        return fname

    def sdist(self, name: str, version: str, requires: list[str] | tuple[str, ...] = ()) -> str:
        """Build a real sdist with static metadata (PKG-INFO 2.2): a resolver needs no build to read it."""
        dist = name.replace("-", "_")
        stem = f"{dist}-{version}"
        fname = f"{stem}.tar.gz"
        deps = ", ".join(f'"{r}"' for r in requires)
        members = {
            "PKG-INFO": metadata_text(name, version, requires),
            "pyproject.toml": (
                '[build-system]\nrequires = ["setuptools>=68"]\nbuild-backend = "setuptools.build_meta"\n'
                f'[project]\nname = "{name}"\nversion = "{version}"\ndependencies = [{deps}]\n'
            ),
            "setup.py": "# would compile CUDA extensions with torch.utils.cpp_extension\n",
            f"{dist}/__init__.py": "",
        }
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tf:
            for rel, text in members.items():
                data = text.encode()
                info = tarfile.TarInfo(f"{stem}/{rel}")
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
        (self.root / "files" / fname).write_bytes(buf.getvalue())
        self._add(name, fname)
        return fname

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


class _QuietHandler(SimpleHTTPRequestHandler):
    """http.server as is: no range support (a Range header is ignored, the whole file comes back)."""

    requests: list[tuple[str, str]]  # (path, Range header) of every GET, for the tests to read

    def log_message(self, format: str, *args: object) -> None:
        pass

    refuse_agent = ""  # a User-Agent prefix answered with 503 for files (a client-specific outage)

    def do_GET(self) -> None:
        self.requests.append((self.path, self.headers.get("Range", "")))
        if self._refused():
            return
        super().do_GET()

    def _refused(self) -> bool:
        agent = self.headers.get("User-Agent", "")
        if self.refuse_agent and agent.startswith(self.refuse_agent) and "/files/" in self.path:
            self.send_error(503, "unavailable for this client")
            return True
        return False


_RANGE = re.compile(r"bytes=(\d*)-(\d*)$")


class _RangeHandler(_QuietHandler):
    """Answers single byte ranges (RFC 9110) with 206, as PyPI's file host does."""

    def do_GET(self) -> None:
        self.requests.append((self.path, self.headers.get("Range", "")))
        if self._refused():
            return
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


def serve(index: Index, ranges: bool = False, refuse_agent: str = "") -> ThreadingHTTPServer:
    """Serve the index on 127.0.0.1 and an ephemeral port; sets index.url to its simple/ URL.
    `ranges`: answer range requests (206); without it the server always sends whole files.
    `refuse_agent`: answer 503 for files to clients whose User-Agent starts with it (stages an outage
    that hits one client only). The server's `requests` lists every GET."""
    handler = type(
        "Handler",
        (_RangeHandler if ranges else _QuietHandler,),
        {"requests": [], "refuse_agent": refuse_agent},
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(handler, directory=str(index.root)))
    server.requests = handler.requests  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    index.url = f"http://127.0.0.1:{server.server_address[1]}/simple/"
    return server


def platform_args(machine: str, glibc_minor: int = 39) -> list[str]:
    """pip download does not expand manylinux tags below the one named (FACTS.md): name each one."""
    out = []
    for minor in range(glibc_minor, 16, -1):
        out += ["--platform", f"manylinux_2_{minor}_{machine}"]
    return out
