"""`sparkenv lock` against an index whose page names a sha256 its file does not have (issue 43, item 5):
where sparkenv reads the whole file (a server without range support), the bytes are checked against the
index's hash; a mismatch is a G9 FAIL and no lock is written. Real wheels on a loopback index, the real
`uv pip compile`."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from artifacts import Index, serve

WHEEL = "nativepkg-1.0-py3-none-manylinux_2_17_aarch64.whl"


def _index(root: Path, wrong_hash: bool) -> Index:
    """An index of one binary wheel (its file list is read at lock); `wrong_hash`: its page names the
    sha256 of other bytes, as a mirror serving a rebuilt file under the old page does."""
    ix = Index(root)
    fname = ix.wheel("nativepkg", "1.0", tag="py3-none-manylinux_2_17_aarch64",
                     files={"nativepkg/_core.so": b"\x7fELF not really"})  # fmt: skip
    assert fname == WHEEL
    if wrong_hash:
        page = root / "simple" / "nativepkg" / "index.html"
        real = hashlib.sha256((root / "files" / WHEEL).read_bytes()).hexdigest()
        other = hashlib.sha256(b"other bytes").hexdigest()
        text = page.read_text()
        assert f"#sha256={real}" in text
        page.write_text(text.replace(f"#sha256={real}", f"#sha256={other}"))
    return ix


@pytest.fixture
def locker(run, tmp_path):
    def _lock(wrong_hash: bool, caches: Path):
        ix = _index(tmp_path / f"index-{wrong_hash}", wrong_hash)
        server = serve(ix)  # no range support: the whole wheel is read, so its hash can be checked
        try:
            req = tmp_path / "requirements.txt"
            req.write_text("nativepkg\n")
            out = tmp_path / f"out-{wrong_hash}"
            env = {"UV_CACHE_DIR": str(caches / "uv"), "SPARKENV_CACHE_DIR": str(caches / "sparkenv")}
            r = run("lock", str(req), "--index-url", ix.url, "--output-dir", str(out), "--json", env=env)
            whole = [p for p, rng in server.requests if p.endswith(f"/files/{WHEEL}")]
            return r, out, whole
        finally:
            server.shutdown()
            server.server_close()

    return _lock


def _g9_fails(r) -> list[dict]:
    return [f for f in r.json()["findings"] if f["id"] == "G9" and f["status"] == "FAIL"]


def test_an_index_serving_bytes_that_miss_its_own_hash_is_a_fail_and_no_lock(locker, tmp_path):
    r, out, whole = locker(True, tmp_path / "caches")
    assert whole, "the wheel was never downloaded: nothing was checked"
    assert r.code == 1, r.out + r.err
    fails = _g9_fails(r)
    assert len(fails) == 1, fails
    real = hashlib.sha256((tmp_path / "index-True" / "files" / WHEEL).read_bytes()).hexdigest()
    other = hashlib.sha256(b"other bytes").hexdigest()
    f = fails[0]
    assert WHEEL in f["summary"] and other[:12] in f["summary"] and real[:12] in f["summary"]
    assert "use another index or mirror" in f["fix"]
    assert not list(out.glob("pylock*.toml")) and not list(out.glob("requirements*.txt"))
    # the mismatching read was filed nowhere as a good one: a second lock with the same caches reads
    # the file again and fails again
    again, out2, whole2 = locker(True, tmp_path / "caches")
    assert again.code == 1 and len(_g9_fails(again)) == 1, again.out + again.err
    assert whole2 and not list(out2.glob("pylock*.toml"))


def test_the_same_index_with_the_right_hash_is_locked(locker, tmp_path):
    r, out, whole = locker(False, tmp_path / "caches")
    assert whole
    assert r.code == 0, r.out + r.err
    assert not _g9_fails(r)
    assert list(out.glob("pylock*.toml"))
