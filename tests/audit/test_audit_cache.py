"""The audit's cache (sparkenv/audit/memo.py): an unchanged environment is judged from it, and every
way one file of one distribution can change sends the audit back to the files, so a FAIL is never
hidden behind a remembered PASS. Real files, real ELF objects compiled by tests/conftest.py's factory."""

from __future__ import annotations

import json
import os
import shutil
import zlib

import pytest

from sparkenv.audit import memo

LINUX = '; platform_system == "Linux"'


@pytest.fixture
def cached(run, env, elves, clean_root, tmp_path):
    """A passing CUDA 13 environment, audited once (a miss) and once more (a hit)."""
    cache = tmp_path / "cache"

    def audit():  # type: ignore[no-untyped-def]
        r = run(
            "audit",
            str(env.prefix),
            "--root",
            str(clean_root),
            "--json",
            env={"SPARKENV_CACHE_DIR": str(cache)},
        )
        assert r.code in (0, 1), r.err
        return r.code, r.json()

    env.add("filelock", "3.20.0")
    env.add(
        "torch",
        "2.11.0",
        requires=["filelock"],
        files={
            "torch/lib/libtorch_cuda.so": elves.linked(("libcudart.so.13", "libcublas.so.13")),
            "torch/lib/libc10.so": elves.stub("libc10.so"),
            "torch/__init__.py": "",
        },
    )
    first_code, first = audit()
    assert first_code == 0 and first["context"]["cache"] == "miss", first
    code, again = audit()
    assert code == 0 and again["context"]["cache"] == "hit"
    assert again["findings"] == first["findings"]
    return audit, env, cache


def _meta(env, name: str = "torch", version: str = "2.11.0"):  # type: ignore[no-untyped-def]
    return env.site / f"{name}-{version}.dist-info"


def _fails(report: dict) -> list[str]:
    return [f"{f['id']} {f['subject']}" for f in report["findings"] if f["status"] == "FAIL"]


def test_a_replaced_shared_object_is_read_again(cached, elves):
    audit, env, _ = cached
    so = env.site / "torch" / "lib" / "libtorch_cuda.so"
    so.unlink()  # a new inode, as a reinstall leaves it
    shutil.copyfile(elves.linked(("libcudart.so.12",)), so)
    code, report = audit()
    assert code == 1 and report["context"]["cache"] == "miss"
    assert "G1 torch" in _fails(report)


def test_a_shared_object_rewritten_in_place_with_its_mtime_put_back_is_read_again(cached, elves):
    audit, env, _ = cached
    so = env.site / "torch" / "lib" / "libtorch_cuda.so"
    before = os.stat(so)
    with open(so, "r+b") as f:  # the same inode; size and mtime set back: only ctime tells
        f.write(elves.linked(("libcudart.so.12",)).read_bytes())
        f.truncate()
    os.utime(so, ns=(before.st_atime_ns, before.st_mtime_ns))
    code, report = audit()
    assert code == 1 and "G1 torch" in _fails(report)


def test_a_deleted_shared_object_is_seen(cached):
    audit, env, _ = cached
    (env.site / "torch" / "lib" / "libtorch_cuda.so").unlink()
    _code, report = audit()
    assert report["context"]["cache"] == "miss"
    assert any("libtorch_cuda.so" in " ".join(f["evidence"]) + f["summary"] for f in report["findings"]), (
        report
    )


def test_metadata_edited_in_place_is_read_again(cached):
    audit, env, _ = cached
    metadata = _meta(env) / "METADATA"
    text = metadata.read_text()
    metadata.write_text(
        text.replace("Requires-Dist: filelock", "Requires-Dist: filelock\nRequires-Dist: fsspec>=2024")
    )
    _code, report = audit()
    assert report["context"]["cache"] == "miss" and report["verdict"] != "ready", report
    problems = [p for d in report["context"]["broken_requirements"] for p in d["problems"]]
    assert any(p["requirement"].startswith("fsspec") for p in problems), report


def test_record_rewritten_in_place_to_list_another_object_is_read_again(cached, elves):
    audit, env, _ = cached
    extra = env.site / "torch" / "lib" / "libcaffe2_nvrtc.so"
    shutil.copyfile(elves.linked(("libcudart.so.12",)), extra)
    record = _meta(env) / "RECORD"
    with open(record, "a", encoding="utf-8") as f:
        f.write("torch/lib/libcaffe2_nvrtc.so,,\n")
    code, report = audit()
    assert code == 1 and "G1 torch" in _fails(report)


def test_a_new_and_a_removed_distribution_are_seen(cached, elves):
    audit, env, _ = cached
    env.add(
        "nvidia-cuda-runtime-cu12",
        "12.8.90",
        files={"nvidia/cuda_runtime/lib/libcudart.so.12": elves.stub("libcudart.so.12")},
    )
    _, report = audit()
    assert report["context"]["cache"] == "miss" and report["context"]["distributions"] == 3
    assert any(
        f["subject"] == "nvidia-cuda-runtime-cu12" and f["status"] != "PASS" for f in report["findings"]
    )
    shutil.rmtree(env.site / "nvidia_cuda_runtime_cu12-12.8.90.dist-info")
    shutil.rmtree(_meta(env, "filelock", "3.20.0"))  # torch requires it: now a broken requirement
    _code, report = audit()
    assert report["verdict"] != "ready" and report["context"]["distributions"] == 1
    problems = [p for d in report["context"]["broken_requirements"] for p in d["problems"]]
    assert [p["requirement"] for p in problems] == ["filelock"], report


def test_a_fail_stays_a_fail_from_the_cache(cached, elves):
    audit, env, _ = cached
    so = env.site / "torch" / "lib" / "libtorch_cuda.so"
    so.unlink()
    shutil.copyfile(elves.linked(("libcudart.so.12",)), so)
    first_code, first = audit()
    code, again = audit()
    assert first_code == code == 1 and again["context"]["cache"] == "hit"
    assert _fails(again) == _fails(first) and "G1 torch" in _fails(again)


def _cache_file(cache, facts: bool = False):  # type: ignore[no-untyped-def]
    """The report's file, or the file of what was read per distribution and shared object."""
    (path,) = [p for p in (cache / "audit").iterdir() if p.name.endswith(".facts") == facts]
    return path


@pytest.mark.parametrize("facts", [False, True], ids=["report", "facts"])
def test_a_damaged_cache_is_ignored_and_rewritten(cached, elves, facts):
    audit, env, cache = cached
    path = _cache_file(cache, facts)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])  # cut short
    code, report = audit()
    assert code == 0 and report["context"]["cache"] == ("hit" if facts else "miss")
    assert audit()[1]["context"]["cache"] == "hit"
    so = env.site / "torch" / "lib" / "libtorch_cuda.so"  # and a change is still seen
    so.unlink()
    shutil.copyfile(elves.linked(("libcudart.so.12",)), so)
    path = _cache_file(cache, facts)
    path.write_bytes(path.read_bytes()[:100])
    code, report = audit()
    assert code == 1 and "G1 torch" in _fails(report)
    head, _, body = _cache_file(cache, facts).read_text().partition("\n")  # rewritten whole
    assert head == _head(body) and json.loads(body)["header"]


def _head(body: str) -> str:
    """The first line core/cache.py's store writes before an entry's text."""
    return f"audit {memo.STORE.version} {zlib.crc32(body.encode()):08x}"


def test_a_forged_pass_is_not_trusted(cached, elves):
    """A FAIL environment whose cache says PASS, with and without a matching checksum: the audit
    never takes the remembered verdict for files whose stat differs."""
    audit, env, cache = cached
    path = _cache_file(cache)
    passing = path.read_text()
    so = env.site / "torch" / "lib" / "libtorch_cuda.so"
    so.unlink()
    shutil.copyfile(elves.linked(("libcudart.so.12",)), so)
    path.write_text(passing)  # the PASS cache, checksum intact: the object's stat no longer matches it
    code, report = audit()
    assert code == 1 and report["context"]["cache"] == "miss" and "G1 torch" in _fails(report)
    # now the FAIL is remembered; flip it to PASS without the checksum: ignored as damaged
    head, _, body = path.read_text().partition("\n")
    forged = body.replace('"status":"FAIL"', '"status":"PASS"')
    assert forged != body
    path.write_text(f"{head}\n{forged}")
    code, report = audit()
    assert code == 1 and report["context"]["cache"] == "miss"
    # with a checksum that matches but a shape this reader never writes: ignored too
    data = json.loads(body)
    data["report"]["findings"] = "PASS"
    odd = json.dumps(data, separators=(",", ":"))
    path.write_text(f"{_head(odd)}\n{odd}")
    code, report = audit()
    assert code == 1 and "G1 torch" in _fails(report)
