"""A binary wheel's METADATA that came with the bytes fetched for its central directory (wheel builders
write the .dist-info folder last) is taken from there: the metadata read that follows makes no request of
its own (resolve/remote_zip.held_dist_info). Bytes not fetched are never guessed at: a METADATA that lies
before the fetched tail, or straddles its start, is read the usual way.

Real wheels built here, served over HTTP on 127.0.0.1 with range requests."""

from __future__ import annotations

import hashlib
import os
import zipfile
from pathlib import Path

import pytest
from artifacts import Index, dist_info, file_url, metadata_text, record, serve

from sparkenv.index import metadata, remote_zip
from sparkenv.lock import wheel_files

ARM = "cp312-cp312-manylinux_2_17_aarch64"
SO = {"native/_ext.so": b"\x7fELF" + b"\0" * 64}
REQUIRES = ["dep-a>=1", "dep-b==2; extra == 'x'"]


def _ref(ix: Index, fname: str, hashed: bool = True) -> metadata.FileRef:
    sha = hashlib.sha256((ix.root / "files" / fname).read_bytes()).hexdigest() if hashed else ""
    return metadata.FileRef("native", fname, file_url(ix.url, fname), sha)


def _asked(server, suffix: str) -> list[str]:
    return [p for p, _ in server.requests if p.endswith(suffix)]


@pytest.mark.parametrize("hashed", [True, False], ids=["by sha256", "by URL (an early read)"])
def test_metadata_fetched_with_the_central_directory_costs_no_request(tmp_path, monkeypatch, hashed):
    monkeypatch.setenv("SPARKENV_CACHE_DIR", str(tmp_path / "sp"))
    ix = Index(tmp_path / "ix", pep658=True)
    fname = ix.wheel("native", "1.0", tag=ARM, requires=REQUIRES, files=SO)
    server = serve(ix, ranges=True)
    try:
        ref = _ref(ix, fname, hashed)
        assert wheel_files.read_one(ref) == ("native", ("native/_ext.so",))
        got = metadata.read([ref])["native"]
        assert isinstance(got, metadata.Metadata), got
        assert [str(r) for r in got.requires] == ["dep-a>=1", 'dep-b==2; extra == "x"']
        assert _asked(server, ".metadata") == []  # the index serves one: it was not needed
        assert len(_asked(server, fname)) == 1  # the tail, once
    finally:
        server.shutdown()


def _wheel_with_metadata_at(folder: Path, from_metadata_to_end: int) -> Path:
    """A binary wheel whose METADATA starts `from_metadata_to_end` bytes before the
    end of the file, with incompressible bytes before it."""
    fname = folder / f"native-1.0-{ARM}.whl"
    body = 1000
    for _ in range(4):  # RECORD's size digits follow the body's: a few rounds settle it
        text = metadata_text("native", "1.0", REQUIRES).encode() + b"\n" + b"d" * body
        members = dist_info("native", "1.0", REQUIRES, SO, tag=ARM, installer=None)
        info = "native-1.0.dist-info"
        members[f"{info}/METADATA"] = text
        members[f"{info}/RECORD"] = record({k: v for k, v in members.items() if k != f"{info}/RECORD"}, info)
        members["native/pad.bin"] = os.urandom(200_000)  # incompressible: the tail never reaches back
        order = [
            "native/pad.bin",
            f"{info}/METADATA",
            *(k for k in members if not k.endswith(("METADATA", ".bin"))),
        ]
        with zipfile.ZipFile(fname, "w") as zf:
            for name in order:  # stored: each member's size in the file is its own, whatever its bytes
                zf.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), members[name])
        with zipfile.ZipFile(fname) as zf:
            start = zf.getinfo(f"{info}/METADATA").header_offset
        missing = from_metadata_to_end - (fname.stat().st_size - start)
        if missing == 0:
            return fname
        body += missing
    raise AssertionError("could not place METADATA where the test wants it")


@pytest.mark.parametrize(
    "where",
    [remote_zip._TAIL + 100, 150_000],
    ids=["straddling the tail's start", "far before the tail"],
)
def test_metadata_outside_the_fetched_bytes_is_read_the_usual_way(tmp_path, monkeypatch, where):
    monkeypatch.setenv("SPARKENV_CACHE_DIR", str(tmp_path / "sp"))
    ix = Index(tmp_path / "ix", pep658=False)
    built = _wheel_with_metadata_at(tmp_path, where)
    fname = ix.add(built)
    server = serve(ix, ranges=True)
    try:
        ref = _ref(ix, fname)
        assert wheel_files.read_one(ref) == ("native", ("native/_ext.so",))
        tail_only = list(server.requests)
        got = metadata.read([ref])["native"]
        assert isinstance(got, metadata.Metadata), got
        assert [str(r) for r in got.requires] == ["dep-a>=1", 'dep-b==2; extra == "x"']
        assert got.via == metadata.FROM_WHEEL  # read from the wheel now, not taken from partial bytes
        assert len(server.requests) > len(tail_only)
    finally:
        server.shutdown()
