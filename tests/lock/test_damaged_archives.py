"""A damaged archive is a one-line reason, never a crash: a deflate stream that fails in zlib itself (not
as a CRC mismatch, which zipfile reports) inside a wheel's METADATA, or a damaged sdist gzip stream, as a
damaged download or a broken builder leaves it. Real wheels and sdists built here, damaged byte by byte,
served over HTTP on 127.0.0.1."""

from __future__ import annotations

import hashlib
import io
import random
import tarfile
import zipfile
import zlib
from pathlib import Path

import pytest
from artifacts import Index, file_url, metadata_text, serve, tar_gz

from sparkenv.index import metadata
from sparkenv.lock import sdist_scan, wheel_files

ARM = "cp312-cp312-manylinux_2_17_aarch64"
SO = {"native/_ext.so": b"\x7fELF" + b"\0" * 64}
REQUIRES = ["dep-a>=1"]


def _ref(ix: Index, fname: str, key: str) -> metadata.FileRef:
    sha = hashlib.sha256((ix.root / "files" / fname).read_bytes()).hexdigest()
    return metadata.FileRef(key, fname, file_url(ix.url, fname), sha)


def _damage_metadata_stream(path: Path) -> None:
    """Flip bytes inside the wheel's deflated METADATA until inflating it fails in zlib itself (not a CRC
    mismatch): what a damaged download or a broken builder leaves."""
    data = path.read_bytes()
    with zipfile.ZipFile(path) as zf:
        info = next(i for i in zf.infolist() if i.filename.endswith(".dist-info/METADATA"))
    start = info.header_offset + 30 + len(info.filename.encode())
    for at in range(start, start + info.compress_size - 2):
        damaged = bytearray(data)
        damaged[at : at + 2] = bytes(b ^ 0xFF for b in damaged[at : at + 2])
        try:
            with zipfile.ZipFile(io.BytesIO(bytes(damaged))) as zf:
                zf.read(info.filename)
        except zlib.error:
            path.write_bytes(bytes(damaged))
            return
        except zipfile.BadZipFile:
            continue
    raise AssertionError("no damage made zlib fail")


@pytest.mark.parametrize("ranges", [True, False], ids=["range requests", "whole file"])
def test_a_damaged_metadata_stream_is_a_reason_not_a_crash(tmp_path, monkeypatch, ranges):
    monkeypatch.setenv("SPARKENV_CACHE_DIR", str(tmp_path / "sp"))
    ix = Index(tmp_path / "ix", pep658=False)
    big = {**SO, "native/data.txt": b"words and more words\n" * 2000}
    fname = ix.wheel("native", "1.0", tag=ARM, requires=REQUIRES, files=big)
    _damage_metadata_stream(ix.root / "files" / fname)
    server = serve(ix, ranges=ranges)
    try:
        ref = _ref(ix, fname, "native")
        # the file list does not depend on the damaged member
        assert wheel_files.read_one(ref) == ("native", ("native/_ext.so",))
        got = metadata.read([ref])["native"]
    finally:
        server.shutdown()
    assert isinstance(got, str) and got.startswith("not a readable zip"), got


def _damage_gzip(path: Path, up_to: str = "") -> None:
    """Flip bytes of an sdist's gzip stream so that reading it (through the member whose name ends with
    `up_to`, else through the end) fails after it opened: in zlib itself where the damage is met in a
    member's data (tarfile lets zlib's error through there), else as the ReadError tarfile makes of it
    where a header is read. Both are a damaged download to sparkenv."""
    data = path.read_bytes()
    rng = random.Random(7)  # the same damage on every run
    fallback = None
    for _ in range(3000):
        damaged = bytearray(data)
        for at in rng.sample(range(20, len(data) - 10), 2):
            damaged[at] ^= 0xFF
        try:
            tf = tarfile.open(fileobj=io.BytesIO(bytes(damaged)), mode="r:*")  # noqa: SIM115 - closed below
        except (tarfile.TarError, zlib.error, OSError, EOFError):
            continue  # not even opened: a damage the reading below never meets
        try:
            for member in tf:
                if member.isfile():
                    extracted = tf.extractfile(member)
                    assert extracted is not None
                    extracted.read()
                    if up_to and member.name.endswith(up_to):
                        break
        except zlib.error:
            path.write_bytes(bytes(damaged))
            return
        except (tarfile.TarError, OSError, EOFError):
            fallback = fallback or bytes(damaged)
        finally:
            tf.close()
    assert fallback is not None, "no damage made the reading fail"
    path.write_bytes(fallback)


def _sdist(ix: Index, name: str) -> str:
    """A real sdist whose sources come before its PKG-INFO (as hatchling writes them), so damage in the
    stream's middle is met on the way to either."""
    words = random.Random(1)  # varied text: a long deflate stream, as real sources make
    members = {
        **{
            f"src/part{i}.c": "".join(
                f"int v{words.randrange(10**9)} = {words.randrange(10**6)};\n" for _ in range(300)
            )
            for i in range(6)
        },
        "PKG-INFO": metadata_text(name, "1.0", REQUIRES),
    }
    built = ix.root.parent / f"{name}-1.0.tar.gz"
    built.write_bytes(tar_gz(f"{name}-1.0", members))
    return ix.add(built)


def test_a_damaged_sdist_stream_is_a_reason_not_a_crash(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARKENV_CACHE_DIR", str(tmp_path / "sp"))
    ix = Index(tmp_path / "ix")
    scanned_name = _sdist(ix, "builds")
    _damage_gzip(ix.root / "files" / scanned_name)  # the scan of its build files meets it
    read_name = _sdist(ix, "described")
    _damage_gzip(ix.root / "files" / read_name, up_to="/PKG-INFO")  # its metadata read meets it too
    server = serve(ix, ranges=True)
    try:
        scanned = sdist_scan.scan([_ref(ix, scanned_name, "builds")])["builds"]
        got = metadata.read([_ref(ix, read_name, "described")])["described"]
    finally:
        server.shutdown()
    assert scanned.kind == "unknown" and scanned.evidence and scanned_name in scanned.evidence[0], scanned
    assert isinstance(got, str) and got.startswith("not a readable archive"), got
