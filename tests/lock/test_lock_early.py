"""Reads started while uv resolves (lock/early.py) and uv's cache of multi-tag wheels
(index/uv_cache.py): real wheels on a loopback index, the real `uv pip compile` and its resolver log."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

from artifacts import Index, file_url, serve

from sparkenv.index import metadata, uv_cache
from sparkenv.lock import early, wheel_files

# three platform tags, as many real wheels have: a name that long uv files under a hash of its tags
ARM = "cp312-cp312-manylinux2014_aarch64.manylinux_2_17_aarch64.manylinux_2_28_aarch64"
X86 = "cp312-cp312-manylinux2014_x86_64.manylinux_2_17_x86_64.manylinux_2_28_x86_64"


def _sha(ix: Index, fname: str) -> str:
    return hashlib.sha256((ix.root / "files" / fname).read_bytes()).hexdigest()


def test_uvs_picks_are_parsed_from_its_resolver_log_and_nothing_else():
    line = "DEBUG Selecting: Flash_Attn==2.8.3 [compatible] (flash_attn-2.8.3-cp312-cp312-linux_aarch64.whl)"
    assert early.picked(line) == ("flash-attn", "2.8.3", "flash_attn-2.8.3-cp312-cp312-linux_aarch64.whl")
    assert early.picked("DEBUG Searching for a compatible version of peft (>=0.17.1)") is None
    assert early.picked("error: Failed to build `x==1`") is None
    assert early.picked("DEBUG Selecting: peft==0.17.1 [compatible]") is None  # no file named


def test_a_picked_binary_wheel_is_read_at_once_and_the_lock_then_reads_it_from_the_cache(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("SPARKENV_CACHE_DIR", str(tmp_path / "sp"))
    ix = Index(tmp_path / "ix")
    native = ix.wheel("native", "1.0", tag=ARM, files={"native/_ext.so": b"\x7fELF" + b"\0" * 64})
    pure = ix.wheel("pure", "1.0")
    server = serve(ix, ranges=True)
    try:
        reads = early.EarlyReads(ix.url)
        reads.line(f"DEBUG Selecting: native==1.0 [compatible] ({native})")
        reads.line(f"DEBUG Selecting: pure==1.0 [compatible] ({pure})")  # nothing to read in it
        reads.line("DEBUG Adding direct dependency: native*")
        reads.settle({native: _sha(ix, native), pure: _sha(ix, pure)})
        asked = list(server.requests)
        # what the lock reads after uv comes from the cache the early read filled: no request
        ref = metadata.FileRef("native", native, file_url(ix.url, native), _sha(ix, native))
        assert wheel_files.read([ref]) == {"native": ("native/_ext.so",)}
        assert server.requests == asked
    finally:
        server.shutdown()
    assert any(p.endswith(f"/{native}") for p, _ in asked), asked
    assert not any("pure" in p for p, _ in asked), asked  # a pure wheel's page is not even read
    names = metadata.STORE.load(early.NAMES)
    assert names == {native: _sha(ix, native)}  # a later lock knows this file's answer is cached
    again = early.EarlyReads(ix.url)
    again.line(f"DEBUG Selecting: native==1.0 [compatible] ({native})")
    assert again.jobs == {}  # nothing queued: its answer is on disk under the sha256 it had
    again.close()


def test_a_wrong_hint_only_costs_the_read_the_lock_makes_itself(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARKENV_CACHE_DIR", str(tmp_path / "sp"))
    ix = Index(tmp_path / "ix")
    native = ix.wheel("native", "1.0", tag=ARM, files={"native/_ext.so": b"\x7fELF" + b"\0" * 64})
    server = serve(ix, ranges=True)
    try:
        reads = early.EarlyReads(ix.url)
        reads.line("DEBUG Selecting: native==9.9 [compatible] (native-9.9-cp312-cp312-linux_aarch64.whl)")
        reads.line("DEBUG Selecting: ghost==1.0 [compatible] (ghost-1.0-cp312-cp312-linux_aarch64.whl)")
        reads.settle({native: _sha(ix, native)})
        assert not list(metadata.STORE.path("-").parent.glob("*.native-2"))  # nothing filed under a guess
        ref = metadata.FileRef("native", native, file_url(ix.url, native), _sha(ix, native))
        assert wheel_files.read([ref]) == {"native": ("native/_ext.so",)}  # read by the lock, as before
    finally:
        server.shutdown()


def test_a_lock_reads_its_binary_wheels_while_uv_resolves(run, tmp_path, monkeypatch):
    ix = Index(tmp_path / "ix")
    native = ix.wheel("native", "1.0", tag=ARM, files={"native/_ext.so": b"\x7fELF" + b"\0" * 64})
    ix.wheel("app", "1.0", requires=["native"])
    server = serve(ix, ranges=True)
    env = {"UV_CACHE_DIR": str(tmp_path / "uv"), "SPARKENV_CACHE_DIR": str(tmp_path / "sp")}
    try:
        req = tmp_path / "requirements.txt"
        req.write_text("app\n")
        r = run("lock", str(req), "--index-url", ix.url, "--output-dir", str(tmp_path / "out"), env=env)
    finally:
        server.shutdown()
    assert r.code == 0, r.out + r.err
    cache = tmp_path / "sp" / "metadata"
    # uv's log named the pick; the early read filed its file list and the file's name for the next lock
    # (each entry's first line is the store's: core/cache.py)
    assert json.loads((cache / early.NAMES).read_text().partition("\n")[2]) == {native: _sha(ix, native)}
    assert (cache / f"{_sha(ix, native)}.native-2").read_text().partition("\n")[2] == "native/_ext.so\n"
    # where the file is, the early read found on the page uv cached: the page was read once, by uv;
    # the file once, early, and its answer taken by the lock's read of the URL the lock names
    asked = [p for p, _ in server.requests]
    assert asked.count("/simple/native/") == 1 and asked.count(f"/files/{native}") == 1, server.requests
    pages = list((tmp_path / "uv").glob(f"{uv_cache.SIMPLE}/index/*/native.rkyv"))
    assert len(pages) == 1
    with monkeypatch.context() as m:
        m.setenv("UV_CACHE_DIR", str(tmp_path / "uv"))
        assert uv_cache.file_urls("native", "native-1.0-", index_is_pypi=False) == {
            native: file_url(ix.url, native)
        }


def test_a_multi_tag_wheels_metadata_is_read_from_uvs_cache_only_when_unambiguous(run, tmp_path, monkeypatch):
    ix = Index(tmp_path / "ix")
    arm = ix.wheel("native", "1.0", tag=ARM, requires=["dep-a"])
    x86 = ix.wheel("native", "1.0", tag=X86, requires=["dep-a"])
    ix.wheel("dep-a", "1.0")
    server = serve(ix, ranges=True)
    env = {"UV_CACHE_DIR": str(tmp_path / "uv"), "SPARKENV_CACHE_DIR": str(tmp_path / "sp")}
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv"))
    try:
        req = tmp_path / "requirements.txt"
        req.write_text("native\n")
        out = str(tmp_path / "out")
        r = run("lock", str(req), "--index-url", ix.url, "--output-dir", out, env=env)
        assert r.code == 0, r.out + r.err
        # uv filed the arm64 wheel's metadata under a hash of its tags: the one file of 1.0 there
        filed = [p.name for p in (tmp_path / "uv").glob("wheels-v8/index/*/native/*.msgpack")]
        assert len(filed) == 1 and filed[0] != f"{arm[len('native-') : -len('.whl')]}.msgpack", filed
        # read in another process: this one keeps what it found (uv_cache._FOUND) and asks again below
        code = f"from sparkenv.index import uv_cache; print(uv_cache.requires({arm!r}, False))"
        got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        assert got.stdout.strip() == "[<Requirement('dep-a')>]", got.stdout + got.stderr
        r = run(
            "lock", str(req), "--index-url", ix.url, "--output-dir", out, "--platform", "linux/amd64", env=env
        )
        assert r.code == 0, r.out + r.err
    finally:
        server.shutdown()
    # two files of 1.0 now (one per platform's wheel): which is whose is uv's secret, so neither is taken
    assert uv_cache.requires(arm, index_is_pypi=False) is None
    assert uv_cache.requires(x86, index_is_pypi=False) is None


def test_a_pick_uv_backtracks_from_is_not_read(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARKENV_CACHE_DIR", str(tmp_path / "sp"))
    ix = Index(tmp_path / "ix")
    old = ix.wheel("native", "1.0", tag=ARM, files={"native/_ext.so": b"\x7fELF" + b"\0" * 64})
    new = ix.wheel("native", "2.0", tag=ARM, files={"native/_ext.so": b"\x7fELF" + b"\0" * 64})
    server = serve(ix, ranges=True, delay=0.5)  # the page answers after uv has moved on to 2.0
    try:
        reads = early.EarlyReads(ix.url)
        reads.line(f"DEBUG Selecting: native==1.0 [compatible] ({old})")
        reads.line(f"DEBUG Selecting: native==2.0 [compatible] ({new})")
        reads.settle({new: _sha(ix, new)})
    finally:
        server.shutdown()
    wheels = [p for p, _ in server.requests if p.endswith(".whl")]
    assert wheels and all(p.endswith(f"/{new}") for p in wheels), wheels
    assert metadata.STORE.path(f"{_sha(ix, new)}.native-2").is_file()
    assert not metadata.STORE.path(f"{_sha(ix, old)}.native-2").exists()


def test_a_file_read_by_url_before_its_hash_was_known_serves_only_a_read_of_that_url(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARKENV_CACHE_DIR", str(tmp_path / "sp"))
    ix = Index(tmp_path / "ix")
    one = ix.wheel("native", "1.0", tag=ARM, files={"native/_one.so": b"\x7fELF" + b"\0" * 64})
    two = ix.wheel("native", "2.0", tag=ARM, files={"native/_two.so": b"\x7fELF" + b"\0" * 64})
    server = serve(ix, ranges=True)
    try:
        # read early from the URL uv's page gave, no sha256 known yet
        guessed = metadata.FileRef("native", one, file_url(ix.url, one), "")
        locked = metadata.FileRef("native", two, file_url(ix.url, two), _sha(ix, two))
        same = metadata.FileRef("native", one, file_url(ix.url, one), _sha(ix, one))
        # the metadata first (a file list read would bring it along: test_metadata_with_file_list.py)
        early_meta = metadata.read([guessed])["native"]
        asked = len(server.requests)
        metadata.read([locked])  # the lock names another URL: read there, the early answer not taken
        assert len(server.requests) == asked + 1
        # the lock names that URL: the early answer, filed under the lock's sha256, without a request
        got = metadata.read([same])["native"]
        assert len(server.requests) == asked + 1
        # the file lists likewise
        assert wheel_files.read_one(guessed) == ("native", ("native/_one.so",))
        asked = len(server.requests)
        assert wheel_files.read_one(locked) == ("native", ("native/_two.so",))
        assert len(server.requests) == asked + 1
        assert wheel_files.read_one(same) == ("native", ("native/_one.so",))
        assert len(server.requests) == asked + 1
    finally:
        server.shutdown()
    assert metadata.STORE.path(f"{_sha(ix, one)}.native-2").read_text().endswith("\n" + "native/_one.so\n")
    assert isinstance(got, metadata.Metadata) and isinstance(early_meta, metadata.Metadata)
    assert got.requires == early_meta.requires and got.via == early_meta.via == "PEP 658"
    assert metadata.STORE.path(f"{_sha(ix, one)}.metadata").is_file()


def test_the_locks_file_lists_download_only_what_neither_the_cache_nor_an_early_read_holds(
    tmp_path, monkeypatch
):
    """resolve/wheel_files.read: a list kept in the cache and one read early at the lock's URL are taken
    without a request (the early one filed under the lock's sha256), the rest downloaded; a package with
    two wheels is answered by the last, in the lock's order."""
    monkeypatch.setenv("SPARKENV_CACHE_DIR", str(tmp_path / "sp"))
    ix = Index(tmp_path / "ix")
    elf = b"\x7fELF" + b"\0" * 64
    kept = ix.wheel("kept", "1.0", tag=ARM, files={"kept/_k.so": elf})
    early_one = ix.wheel("early", "1.0", tag=ARM, files={"early/_e.so": elf})
    fresh = ix.wheel("fresh", "1.0", tag=ARM, files={"fresh/_f.so": elf})
    dup_arm = ix.wheel("dup", "1.0", tag=ARM, files={"dup/_arm.so": elf})
    dup_x86 = ix.wheel("dup", "1.0", tag=X86, files={"dup/_x86.so": elf})
    server = serve(ix, ranges=True)

    def ref(key: str, name: str, sha: bool = True) -> metadata.FileRef:
        return metadata.FileRef(key, name, file_url(ix.url, name), _sha(ix, name) if sha else "")

    try:
        wheel_files.read_one(ref("kept", kept))  # a lock before: in the cache by its sha256
        wheel_files.read_one(ref("early", early_one, sha=False))  # while uv resolved: by URL only
        asked = len(server.requests)
        got = wheel_files.read([ref("kept", kept), ref("early", early_one), ref("fresh", fresh),
                                ref("dup", dup_arm), ref("dup", dup_x86)])  # fmt: skip
        new = [p for p, _ in server.requests[asked:]]
    finally:
        server.shutdown()
    assert got == {
        "kept": ("kept/_k.so",),
        "early": ("early/_e.so",),
        "fresh": ("fresh/_f.so",),
        "dup": ("dup/_x86.so",),
    }
    assert {p.rsplit("/", 1)[-1] for p in new} == {fresh, dup_arm, dup_x86}
    assert metadata.STORE.path(f"{_sha(ix, early_one)}.native-2").read_text().endswith("\n" + "early/_e.so\n")
