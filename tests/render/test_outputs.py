"""All-or-nothing outputs (issue 11, item 5 `--report /` and the all-or-nothing rule): every path is
checked before anything is written; a failing output leaves every other output as it was and no
temporary behind. Real files, real FIFOs, the real /dev/full."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from sparkenv.core import outputs


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    return subprocess.run(
        [sys.executable, "-m", "sparkenv", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env=env,
    )


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def exit_2(proc: subprocess.CompletedProcess[str], needle: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "internal error" not in proc.stderr
    assert needle in proc.stderr, proc.stderr


def test_report_to_the_root_folder_is_exit_2_not_70(env, clean_root):
    exit_2(
        cli("audit", str(env.prefix), "--root", str(clean_root), "--report", "/"),
        "/: cannot write: is a directory",
    )


def test_a_failing_junit_leaves_the_old_report_untouched(env, clean_root, tmp_path: Path):
    report = tmp_path / "r.json"
    report.write_text("old report\n")
    proc = cli(
        "audit", str(env.prefix), "--root", str(clean_root), "--report", str(report),
        "--junit", str(tmp_path / "missing" / "j.xml"),
    )  # fmt: skip
    exit_2(proc, f"{tmp_path}/missing/j.xml: cannot write: folder {tmp_path}/missing does not exist")
    assert report.read_text() == "old report\n" and proc.stdout == ""
    assert leftovers(tmp_path) == []


def test_a_stream_that_fails_replaces_no_file(env, clean_root, tmp_path: Path):
    report = tmp_path / "r.json"
    report.write_text("old report\n")
    proc = cli(
        "audit", str(env.prefix), "--root", str(clean_root), "--report", str(report), "--junit", "/dev/full"
    )
    # a full device is the device's fault, exit 3 as a full stdout is (issue 43)
    assert proc.returncode == 3 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "/dev/full: cannot write: no space left on the device" in proc.stderr, proc.stderr
    assert report.read_text() == "old report\n" and leftovers(tmp_path) == []


def test_report_and_junit_on_one_file_is_refused(env, clean_root, tmp_path: Path):
    same = tmp_path / "out"
    exit_2(
        cli("audit", str(env.prefix), "--root", str(clean_root), "--report", str(same), "--junit", str(same)),
        "the same file as",
    )
    assert not same.exists()


def test_a_fifo_nobody_reads_is_refused_at_once(env, clean_root, tmp_path: Path):
    fifo = tmp_path / "r.json"
    os.mkfifo(fifo)
    exit_2(
        cli("audit", str(env.prefix), "--root", str(clean_root), "--report", str(fifo)),
        "a FIFO that no process reads",
    )


def test_a_fifo_with_a_reader_gets_the_report(env, clean_root, tmp_path: Path):
    fifo = tmp_path / "r.json"
    os.mkfifo(fifo)
    got: list[bytes] = []
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader is there before sparkenv starts

    def drain() -> None:
        os.set_blocking(fd, True)
        while chunk := os.read(fd, 65536):
            got.append(chunk)

    # keep a writer end open until sparkenv has written, or the reader sees EOF at once
    keep = os.open(fifo, os.O_WRONLY)
    reader = threading.Thread(target=drain)
    reader.start()
    try:
        proc = cli("audit", str(env.prefix), "--root", str(clean_root), "--report", str(fifo))
    finally:
        os.close(keep)
        reader.join(10)
        os.close(fd)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(b"".join(got))["schema"] == "sparkenv.core.report/1"


def test_write_all_moves_every_file_or_none(tmp_path: Path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text("old a")
    outputs.write_all({a: "new a", b: b"new b"})
    assert (a.read_text(), b.read_text()) == ("new a", "new b")
    with pytest.raises(outputs.OutputError):
        outputs.write_all({a: "newer a", tmp_path / "no" / "c": "c"})
    assert a.read_text() == "new a" and leftovers(tmp_path) == []


def test_write_all_keeps_the_mode_of_a_file_it_replaces(tmp_path: Path):
    a = tmp_path / "a"
    a.write_text("x")
    a.chmod(0o640)
    outputs.write_one(a, "y")
    assert a.stat().st_mode & 0o777 == 0o640


def test_interrupted_write_leaves_no_temporary(tmp_path: Path, monkeypatch):
    # A fault we cannot cause for real at the right instant (Ctrl-C between two writes): the second
    # temporary's write raises KeyboardInterrupt, as the SIGINT/SIGTERM handler would.
    real_write = outputs._write_temporary
    calls = []

    def interrupted(p, mode):  # type: ignore[no-untyped-def]
        calls.append(p.dest)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real_write(p, mode)

    monkeypatch.setattr(outputs, "_write_temporary", interrupted)
    (tmp_path / "a").write_text("old")
    with pytest.raises(KeyboardInterrupt):
        outputs.write_all({tmp_path / "a": "new", tmp_path / "b": "new"})
    assert (tmp_path / "a").read_text() == "old" and not (tmp_path / "b").exists()
    assert leftovers(tmp_path) == []
