"""What tests/image/test_build_arm64.py says (and, under SPARKENV_REQUIRE_DOCKER=1, fails with) when this
machine cannot run aarch64 containers: read from binfmt_misc entries written here the way the kernel shows
them."""

from __future__ import annotations

from pathlib import Path

import arm64_standin as arm

# /proc/sys/fs/binfmt_misc/qemu-aarch64 as the kernel shows it after qemu-user-static registered it
ENABLED = """enabled
interpreter /usr/libexec/qemu-binfmt/aarch64-binfmt-P
flags: PF
offset 0
magic 7f454c460201010000000000000000000200b700
mask ffffffffffffff00fffffffffffffffffeffffff
"""


def test_an_enabled_handler_with_the_f_flag_runs_aarch64(tmp_path: Path) -> None:
    entry = tmp_path / "qemu-aarch64"
    entry.write_text(ENABLED)
    assert arm.emulation_problem(entry, "x86_64") is None


def test_each_missing_piece_is_named_with_its_fix(tmp_path: Path) -> None:
    entry = tmp_path / "qemu-aarch64"
    missing = arm.emulation_problem(entry, "x86_64")
    assert missing and "is missing" in missing and "apt-get install qemu-user-static" in missing
    entry.write_text(ENABLED.replace("enabled", "disabled", 1))
    assert "update-binfmts --enable qemu-aarch64" in (arm.emulation_problem(entry, "x86_64") or "")
    entry.write_text(ENABLED.replace("flags: PF", "flags: P"))
    assert "lacks the F flag" in (arm.emulation_problem(entry, "x86_64") or "")


def test_an_aarch64_host_needs_no_emulator(tmp_path: Path) -> None:
    assert arm.emulation_problem(tmp_path / "absent", "aarch64") is None
