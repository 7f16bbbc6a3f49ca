"""The image's forward-compatibility libcuda (cuda-compat), read from the files the package installs:
`libcuda.so.<driver version>` beside its `libcuda.so.1` link, in data/drivers.toml's folders."""

from __future__ import annotations

from pathlib import Path

from sparkenv.environment import forward_compat
from sparkenv.knowledge import drivers


def _compat_folder(folder: Path, *versions: str) -> Path:
    """The layout cuda-compat-13-0 installs: the library by its version, the sonames linked to it."""
    folder.mkdir(parents=True)
    for v in versions:
        (folder / f"libcuda.so.{v}").write_bytes(b"\x7fELF")
    if versions:
        (folder / "libcuda.so.1").symlink_to(f"libcuda.so.{versions[-1]}")
        (folder / "libcuda.so").symlink_to("libcuda.so.1")
    (folder / "libnvidia-ptxjitcompiler.so.580.95.05").write_bytes(b"\x7fELF")
    return folder


def test_the_version_is_read_from_the_library_s_name(tmp_path):
    folder = _compat_folder(tmp_path / "compat", "580.95.05")
    assert forward_compat.libcuda_version([str(folder)]) == "580.95.05"


def test_the_newest_of_several_across_folders_counts(tmp_path):
    a = _compat_folder(tmp_path / "a", "575.57.08")
    b = _compat_folder(tmp_path / "b", "580.105.08", "580.95.05")
    assert forward_compat.libcuda_version([str(a), str(tmp_path / "missing"), str(b)]) == "580.105.08"


def test_none_without_the_package(tmp_path):
    empty = _compat_folder(tmp_path / "empty")
    dangling = tmp_path / "dangling"
    dangling.mkdir()
    (dangling / "libcuda.so.580.95.05").symlink_to("gone")  # a link to nothing is no library
    assert forward_compat.libcuda_version([str(empty), str(dangling), str(tmp_path / "missing")]) is None


def test_the_folders_are_the_data_file_s():
    """Where the package puts it (data/drivers.toml); this machine's own folders are whatever they are."""
    assert "/usr/local/cuda/compat" in drivers().forward_compat.dirs
    found = forward_compat.libcuda_version()
    assert found is None or found[0].isdigit()
