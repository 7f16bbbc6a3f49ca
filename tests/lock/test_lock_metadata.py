"""Every locked file's metadata is read, whatever the index serves: PEP 658 files or not, range requests
or not, central directories past 64 KiB, ZIP64 wheels; a file that gives nothing is an ERROR, no lock.

Real wheels built here, served over HTTP on 127.0.0.1, resolved by the real `uv pip compile`.
"""

from __future__ import annotations

import pytest
from artifacts import Index, serve

from sparkenv.core.datafiles import parse_toml
from sparkenv.index import metadata, remote_zip

# ~2,400 members with long names: a central directory of ~250 KiB, far past the last 64 KiB of the file
MANY = {f"bigpkg/data/{'x' * 40}_{i:05d}.txt": b"." for i in range(2400)}
# 65,536 members: zipfile must write ZIP64 end records
ZIP64_MEMBERS = {f"z/{i:05d}": b"" for i in range(65536)}


def _build(root, pep658: bool) -> Index:
    ix = Index(root, pep658=pep658)
    ix.wheel("dep-a", "1.0")
    ix.wheel("dep-b", "2.0")
    ix.wheel("bigpkg", "1.0", requires=["dep-a>=1"], files=MANY)
    ix.wheel("zippkg", "1.0", requires=["dep-b==2.0"], files=ZIP64_MEMBERS, zip64=True)
    return ix


@pytest.fixture(scope="module")
def plain_index(tmp_path_factory):
    """No PEP 658 files and a server that answers range requests (206)."""
    ix = _build(tmp_path_factory.mktemp("no658"), pep658=False)
    server = serve(ix, ranges=True)
    yield ix, server
    server.shutdown()


@pytest.fixture(scope="module")
def whole_file_index(tmp_path_factory):
    """No PEP 658 files and no range support: every GET returns the whole file."""
    ix = _build(tmp_path_factory.mktemp("norange"), pep658=False)
    server = serve(ix, ranges=False)
    yield ix, server
    server.shutdown()


def _ref(ix: Index, fname: str) -> metadata.FileRef:
    import hashlib

    data = (ix.root / "files" / fname).read_bytes()
    url = ix.url.replace("/simple/", f"/files/{fname}")
    return metadata.FileRef(fname.split("-")[0], fname, url, hashlib.sha256(data).hexdigest())


@pytest.mark.parametrize("fname", ["bigpkg-1.0-py3-none-any.whl", "zippkg-1.0-py3-none-any.whl"])
def test_metadata_by_range_requests_past_64k_and_zip64(plain_index, fname, tmp_path, monkeypatch):
    ix, server = plain_index
    monkeypatch.setenv("SPARKENV_CACHE_DIR", str(tmp_path))
    size = (ix.root / "files" / fname).stat().st_size
    server.requests.clear()
    got = metadata.read([_ref(ix, fname)])[fname.split("-")[0]]
    assert isinstance(got, metadata.Metadata), got
    assert [str(r) for r in got.requires] in (["dep-a>=1"], ["dep-b==2.0"])
    assert got.via == "the wheel's METADATA"
    wheel_gets = [rng for path, rng in server.requests if path.endswith(".whl")]
    assert wheel_gets and all(rng.startswith("bytes=") for rng in wheel_gets)  # never the whole file
    assert len(wheel_gets) <= 4 and size > 200_000
    again = metadata.read([_ref(ix, fname)])[fname.split("-")[0]]
    assert isinstance(again, metadata.Metadata) and again.via == "cache"


def test_metadata_by_full_download_without_range_support(whole_file_index, tmp_path, monkeypatch):
    ix, _ = whole_file_index
    monkeypatch.setenv("SPARKENV_CACHE_DIR", str(tmp_path))
    got = metadata.read([_ref(ix, "zippkg-1.0-py3-none-any.whl")])["zippkg"]
    assert isinstance(got, metadata.Metadata) and [str(r) for r in got.requires] == ["dep-b==2.0"]


def test_a_file_that_is_not_a_wheel_is_unreadable_with_the_reason(plain_index, tmp_path, monkeypatch):
    ix, _ = plain_index
    monkeypatch.setenv("SPARKENV_CACHE_DIR", str(tmp_path))
    (ix.root / "files" / "broken-1.0-py3-none-any.whl").write_bytes(b"not a zip" * 100)
    got = metadata.read([_ref(ix, "broken-1.0-py3-none-any.whl")])["broken"]
    assert isinstance(got, str) and "not a readable zip" in got
    with pytest.raises(remote_zip.Unreadable):
        remote_zip.read_dist_info(
            ix.url.replace("/simple/", "/files/nothing.whl"), "nothing.whl", ("METADATA",), 5
        )


@pytest.mark.parametrize("fixture", ["plain_index", "whole_file_index"])
def test_lock_without_pep658_reads_every_file_and_writes_a_closed_lock(run, request, fixture, tmp_path):
    ix, _ = request.getfixturevalue(fixture)
    req = tmp_path / "requirements.txt"
    req.write_text("bigpkg\nzippkg\n")
    env = {"UV_CACHE_DIR": str(tmp_path / "uv"), "SPARKENV_CACHE_DIR": str(tmp_path / "sp")}
    r = run("lock", str(req), "--index-url", ix.url, "--output-dir", str(tmp_path / "out"), "--json", env=env)
    assert r.code == 0, r.out + r.err
    found = {(f["id"], f["subject"]): f for f in r.json()["findings"]}
    assert found[("G9", "closure")]["status"] == "PASS"
    names = {
        p["name"] for p in parse_toml((tmp_path / "out" / "pylock.ngc-25-11.toml").read_text())["packages"]
    }
    assert names == {"bigpkg", "zippkg", "dep-a", "dep-b"}


def test_metadata_that_cannot_be_read_is_an_error_and_no_lock(run, tmp_path):
    ix = Index(tmp_path / "ix", pep658=False)
    ix.wheel("dep-a", "1.0")
    ix.wheel("hidden", "1.0", requires=["dep-a"])
    server = serve(ix, ranges=True, refuse_agent="Python-urllib")
    try:
        req = tmp_path / "requirements.txt"
        req.write_text("hidden\n")
        # no uv cache: sparkenv would read the metadata uv cached there and never ask the host
        env = {"UV_NO_CACHE": "1", "SPARKENV_CACHE_DIR": str(tmp_path / "sp")}
        r = run("lock", str(req), "--index-url", ix.url, "--output-dir", str(tmp_path / "out"), env=env)
    finally:
        server.shutdown()
    assert r.code == 1, r.out + r.err
    errors = [ln for ln in r.out.splitlines() if ln.startswith("G9 ERROR")]
    assert any("hidden-1.0-py3-none-any.whl" in ln and "cannot read the metadata" in ln for ln in errors)
    assert "verdict: blocked" in r.out
    assert not (tmp_path / "out").exists()


def test_the_metadata_uv_cached_while_resolving_is_read_without_a_request(run, tmp_path, monkeypatch):
    ix = Index(tmp_path / "ix")
    ix.wheel("dep-a", "1.0")
    ix.wheel("cached", "1.0", requires=["dep-a>=1", "dep-b; extra == 'x'"])
    server = serve(ix, ranges=True)
    try:
        req = tmp_path / "requirements.txt"
        req.write_text("cached\n")
        env = {"UV_CACHE_DIR": str(tmp_path / "uv"), "SPARKENV_CACHE_DIR": str(tmp_path / "sp")}
        r = run("lock", str(req), "--index-url", ix.url, "--output-dir", str(tmp_path / "out"), env=env)
        assert r.code == 0, r.out + r.err
        metadata_gets = [p for p, _ in server.requests if p.endswith((".metadata", ".whl"))]
    finally:
        server.shutdown()
    from sparkenv.index import uv_cache

    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv"))
    got = uv_cache.requires("cached-1.0-py3-none-any.whl", index_is_pypi=False)
    assert [str(x) for x in got or []] == ["dep-a>=1", 'dep-b; extra == "x"']
    # uv fetched each .metadata once; sparkenv asked for none of them again
    assert sorted(metadata_gets) == sorted(set(metadata_gets))
    assert uv_cache.requires("cached-9.0-py3-none-any.whl", index_is_pypi=False) is None
