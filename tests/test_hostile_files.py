"""Hostile user-supplied files (issue 11, items 4 and 9): FIFOs, /dev/zero and /dev/null behind symlinks,
symlink loops, broken symlinks, oversized and non-UTF-8 files — each ends as one line naming the file and
the real cause (exit 2), or as an ERROR line while the audit goes on. Never a hang, never exit 70.

Everything is real: real FIFOs (os.mkfifo), the real /dev/zero and /dev/null, real symlink loops, and the
CLI run as a separate process with a short timeout, so a hang fails the test instead of stalling CI.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sparkenv.core import safe_read

HANG = 30  # seconds: far above what any of these takes, far below "forever"


def cli(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"} | (env or {})
    return subprocess.run(
        [sys.executable, "-m", "sparkenv", *args],
        capture_output=True,
        text=True,
        timeout=HANG,
        cwd=cwd,
        env=full,
    )


def one_line_exit_2(proc: subprocess.CompletedProcess, *needles: str) -> None:
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    for needle in needles:
        assert needle in proc.stderr, proc.stderr


# --- the helper itself -------------------------------------------------------------------------------


def test_a_fifo_is_refused_without_blocking(tmp_path: Path):
    fifo = tmp_path / "METADATA"
    os.mkfifo(fifo)  # nobody writes: a plain open() would block forever
    with pytest.raises(safe_read.UnreadableFile) as info:
        safe_read.read_text(fifo, what="a METADATA file")
    assert str(info.value) == f"{fifo}: a FIFO (named pipe), not a regular file; expected a METADATA file"


def test_a_symlink_to_dev_zero_is_refused_not_read_until_memory_runs_out(tmp_path: Path):
    link = tmp_path / "METADATA"
    link.symlink_to("/dev/zero")
    with pytest.raises(safe_read.UnreadableFile) as info:
        safe_read.read_bytes(link)
    assert "a character device (a symlink to /dev/zero), not a regular file" in info.value.reason


def test_dev_null_is_a_device_not_permission_denied():
    with pytest.raises(safe_read.UnreadableFile) as info:
        safe_read.read_bytes("/dev/null")
    assert info.value.reason.startswith("a character device") and "permission" not in str(info.value)


def test_a_symlink_loop_is_not_no_such_file(tmp_path: Path):
    loop = tmp_path / "a"
    loop.symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    with pytest.raises(safe_read.UnreadableFile) as info:
        safe_read.read_bytes(loop)
    assert info.value.reason.startswith("symlink loop")


def test_a_broken_symlink_names_where_it_points(tmp_path: Path):
    link = tmp_path / "RECORD"
    link.symlink_to("gone/RECORD")
    with pytest.raises(safe_read.UnreadableFile) as info:
        safe_read.read_bytes(link)
    assert info.value.reason == "broken symlink (points to gone/RECORD, which does not exist)"
    with pytest.raises(safe_read.UnreadableFile) as info:
        safe_read.read_bytes(tmp_path / "missing")
    assert info.value.reason == "no such file"


def test_a_directory_is_named_as_one(tmp_path: Path):
    with pytest.raises(safe_read.UnreadableFile) as info:
        safe_read.read_bytes(tmp_path, what="a profile file")
    assert info.value.reason == "a directory, not a regular file; expected a profile file"


def test_a_file_over_the_cap_is_refused_by_its_size(tmp_path: Path):
    big = tmp_path / "big"
    with open(big, "wb") as fh:
        fh.truncate(3 << 20)  # sparse: 3 MiB without writing them
    with pytest.raises(safe_read.UnreadableFile) as info:
        safe_read.read_bytes(big, what="a lock", limit=1 << 20)
    assert info.value.reason == "3.0 MiB, over the 1.0 MiB limit for a lock"
    assert len(safe_read.read_bytes(big, limit=4 << 20)) == 3 << 20


def test_proc_files_that_claim_size_zero_are_read_to_the_end():
    # /proc files report st_size 0: the reader reads to EOF, not to st_size
    assert b"MemTotal" in safe_read.read_bytes("/proc/meminfo")


def test_bytes_that_are_not_utf8_name_the_line_or_are_replaced_on_request(tmp_path: Path):
    bad = tmp_path / "req.txt"
    bad.write_bytes(b"peft\ntorch\xff\n")
    with pytest.raises(safe_read.UnreadableFile) as info:
        safe_read.read_text(bad, what="a requirements file")
    assert info.value.reason == "not UTF-8 text (byte 0xff on line 2); expected a requirements file"
    assert safe_read.read_text(bad, errors="replace") == "peft\ntorch\ufffd\n"


def test_undecodable_file_names_are_escaped_in_the_message(tmp_path: Path):
    name = os.fsdecode(os.fsencode(str(tmp_path)) + b"/caf\xff")
    with pytest.raises(safe_read.UnreadableFile) as info:
        safe_read.read_bytes(name)
    assert str(info.value).endswith("caf\\xff: no such file")
    str(info.value).encode("utf-8")  # printable everywhere: no lone surrogate left


# --- audit: ERROR lines, the audit goes on --------------------------------------------------------------


def test_audit_reports_a_fifo_metadata_and_goes_on(env, clean_root):
    env.add("peft", "0.17.0")
    ghost = env.site / "ghost-1.0.dist-info"
    ghost.mkdir()
    os.mkfifo(ghost / "METADATA")
    proc = cli("audit", str(env.prefix), "--root", str(clean_root))
    assert proc.returncode == 0 and proc.stderr == ""
    line = next(ln for ln in proc.stdout.splitlines() if "ghost-1.0.dist-info/METADATA" in ln)
    assert line.startswith("G1 ERROR: ") and "a FIFO (named pipe), not a regular file" in line
    assert "read 1 distributions" in proc.stdout  # peft was still read


def test_audit_reports_metadata_symlinked_to_dev_zero(env, clean_root):
    zero = env.site / "zero-1.0.dist-info"
    zero.mkdir()
    (zero / "METADATA").symlink_to("/dev/zero")
    proc = cli("audit", str(env.prefix), "--root", str(clean_root))
    line = next(ln for ln in proc.stdout.splitlines() if "zero-1.0.dist-info/METADATA" in ln)
    assert line.startswith("G1 ERROR: ") and "a symlink to /dev/zero" in line


def test_audit_reports_a_fifo_record_as_files_unknown(env, clean_root):
    dist = env.add("peft", "0.17.0", record=False)
    os.mkfifo(dist / "RECORD")
    proc = cli("audit", str(env.prefix), "--root", str(clean_root))
    assert proc.returncode == 0, proc.stderr
    line = next(ln for ln in proc.stdout.splitlines() if "RECORD" in ln)
    assert line.startswith(f"G1 WARN: {dist}/RECORD (peft): a FIFO (named pipe), not a regular file")


def test_audit_with_a_fifo_pyvenv_cfg_is_one_line_naming_it(env):
    (env.prefix / "pyvenv.cfg").unlink()
    os.mkfifo(env.prefix / "pyvenv.cfg")
    one_line_exit_2(cli("audit", str(env.prefix)), f"{env.prefix}/pyvenv.cfg: a FIFO (named pipe)")


def test_audit_names_a_single_file_egg_info_itself(env, clean_root):
    egg = env.site / "legacy-0.1.egg-info"
    egg.write_text("Metadata-Version: 1.1\nVersion: 0.1\n\n")  # no Name
    proc = cli("audit", str(env.prefix), "--root", str(clean_root))
    line = next(ln for ln in proc.stdout.splitlines() if "legacy-0.1.egg-info" in ln)
    assert line.startswith("G1 ERROR: ") and "site-packages/PKG-INFO" not in line
    assert "egg-info file has no Name field" in line


def test_audit_lock_that_is_a_fifo_is_one_line(env, tmp_path: Path):
    lock = tmp_path / "pylock.x.toml"
    os.mkfifo(lock)
    one_line_exit_2(cli("audit", str(env.prefix), "--lock", str(lock)), f"{lock}: a FIFO")


# --- check / lock inputs, profiles, pyproject: exit 2, one line ---------------------------------------


def test_check_r_fifo_is_one_line(tmp_path: Path):
    fifo = tmp_path / "requirements.txt"
    os.mkfifo(fifo)
    one_line_exit_2(cli("check", str(fifo)), f"{fifo}: a FIFO (named pipe), not a regular file")


def test_check_with_an_included_fifo_names_the_including_line(tmp_path: Path):
    os.mkfifo(tmp_path / "more.txt")
    (tmp_path / "requirements.txt").write_text("peft\n-r more.txt\n")
    one_line_exit_2(
        cli("check", "requirements.txt", cwd=tmp_path),
        "requirements.txt:2: cannot open included file more.txt: a FIFO (named pipe)",
    )


def test_check_with_an_include_symlinked_to_dev_zero(tmp_path: Path):
    (tmp_path / "more.txt").symlink_to("/dev/zero")
    (tmp_path / "requirements.txt").write_text("-c more.txt\npeft\n")
    # refused by the include fence (sparkenv.core.confine) before the read: no requirements file is under /dev
    one_line_exit_2(
        cli("check", "requirements.txt", cwd=tmp_path),
        "'more.txt' resolves to /dev/zero, which is under /dev",
    )


def test_check_with_a_requirements_loop_and_dev_null(tmp_path: Path):
    (tmp_path / "a.txt").symlink_to("b.txt")
    (tmp_path / "b.txt").symlink_to("a.txt")
    one_line_exit_2(cli("check", "a.txt", cwd=tmp_path), "a.txt: symlink loop")
    one_line_exit_2(cli("check", "/dev/null"), "/dev/null: a character device")


def test_check_non_utf8_requirements_names_the_line(tmp_path: Path):
    (tmp_path / "requirements.txt").write_bytes(b"peft\ntorch\xff\n")
    one_line_exit_2(cli("check", "requirements.txt", cwd=tmp_path), "not UTF-8 text (byte 0xff on line 2)")


def test_pyproject_that_is_a_fifo_is_one_line(tmp_path: Path):
    os.mkfifo(tmp_path / "pyproject.toml")
    one_line_exit_2(cli("check", "pyproject.toml", cwd=tmp_path), "pyproject.toml: a FIFO")


def test_profile_file_that_is_a_fifo_or_dev_zero_is_one_line(tmp_path: Path):
    (tmp_path / "requirements.txt").write_text("peft\n")
    os.mkfifo(tmp_path / "mine.toml")
    (tmp_path / "zero.toml").symlink_to("/dev/zero")
    one_line_exit_2(
        cli("check", "requirements.txt", "--profile", "mine.toml", cwd=tmp_path),
        "mine.toml: cannot read profile file: a FIFO",
    )
    one_line_exit_2(
        cli("check", "requirements.txt", "--profile", "zero.toml", cwd=tmp_path), "a symlink to /dev/zero"
    )


def test_audit_survives_a_direct_url_json_nested_200k_deep(env, clean_root):
    env.add("flash-attn", "2.8.3", direct_url={"url": "x"})
    (env.site / "flash_attn-2.8.3.dist-info" / "direct_url.json").write_text("[" * 200_000 + "]" * 200_000)
    proc = cli("audit", str(env.prefix), "--root", str(clean_root))
    assert proc.returncode in (0, 1) and "internal error" not in proc.stderr, proc.stderr
    assert any(ln.startswith("G2 ") and "flash-attn" in ln for ln in proc.stdout.splitlines())


def test_audit_root_with_a_fifo_constraint_file_does_not_hang(env, clean_root):
    (clean_root / "etc" / "pip").mkdir(parents=True)
    os.mkfifo(clean_root / "etc" / "pip" / "constraint.txt")
    proc = cli("audit", str(env.prefix), "--root", str(clean_root))
    assert proc.returncode == 0 and "internal error" not in proc.stderr, proc.stderr


def test_build_ca_bundle_that_is_a_fifo_is_named_as_one(tmp_path: Path):
    fifo = tmp_path / "ca.pem"
    os.mkfifo(fifo)
    repo = Path(__file__).resolve().parents[1]
    proc = cli(
        "build", "--dry-run", "--lock", "lockfiles/pylock.ngc-25-11.toml", "--ca-bundle", str(fifo), cwd=repo
    )
    one_line_exit_2(proc, f"{fifo}: not a usable CA bundle: a FIFO (named pipe)")
