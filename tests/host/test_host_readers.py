"""The host's readers over real inputs: the kernel module's version lines recorded on real machines and
in public docs (tests/fixtures/machines/drivers/SOURCES.md), a CDI spec in the layout `nvidia-ctk cdi
generate` writes, os-release files, this machine's /proc."""

from __future__ import annotations

from pathlib import Path

import pytest
from host_helpers import ROOT

from sparkenv.cuda.driver import module_flavour
from sparkenv.environment import host_os

DRIVERS = ROOT / "tests" / "fixtures" / "machines" / "drivers"


@pytest.mark.parametrize(
    ("name", "flavour"),
    [("linux-515.65.01.txt", "proprietary"), ("open-555.42.06.txt", "open"), ("h200-580.159.04.txt", "open")],
)
def test_the_module_flavour_from_its_version_line(name, flavour):
    assert module_flavour((DRIVERS / name).read_text(), None) == flavour


def test_the_module_flavour_from_its_taint_where_the_line_is_hidden():
    assert module_flavour(None, "POE") == "proprietary"  # P: a license that is not GPL-compatible
    assert module_flavour(None, "OE") == "open"
    assert module_flavour(None, None) is None and module_flavour("", "") is None


def test_os_release_values_quoted_or_not():
    text = 'PRETTY_NAME="Ubuntu 24.04.3 LTS"\nID=ubuntu\n# a comment\n'
    text += "DGX_SWBUILD_VERSION='7.5.0'\nnot a line\n"
    assert host_os.key_values(text) == {
        "PRETTY_NAME": "Ubuntu 24.04.3 LTS",
        "ID": "ubuntu",
        "DGX_SWBUILD_VERSION": "7.5.0",
    }


def test_cdi_specs_name_their_devices_and_a_broken_one_is_an_error(tmp_path: Path):
    good, bad = tmp_path / "etc", tmp_path / "run"
    good.mkdir()
    bad.mkdir()
    (good / "nvidia.yaml").write_text(
        '---\ncdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n- name: "0"\n  containerEdits:\n'
        "    deviceNodes:\n    - path: /dev/nvidia0\n- name: all\n  containerEdits: {}\n"
    )
    (good / "README").write_text("not a spec")
    (bad / "broken.yaml").write_text("kind: [unclosed\n")
    found = host_os.cdi_specs((str(good), str(bad), str(tmp_path / "absent")))
    assert found["specs"] == [
        {"path": str(good / "nvidia.yaml"), "kind": "nvidia.com/gpu", "devices": ["0", "all"]}
    ]
    assert len(found["errors"]) == 1 and "broken.yaml" in found["errors"][0]


def test_this_machine_reads_without_errors():
    assert host_os.platform()["os_release"]  # every Linux has one
    assert set(host_os.running()) == {"earlyoom", "systemd-oomd"}
    space = host_os.free_space("/")
    assert space["free_bytes"] <= space["total_bytes"]
    assert "error" in host_os.free_space("/nonexistent/folder")
    policy = host_os.cpu_policy()
    assert all(c["max_khz"] is None or c["max_khz"] >= (c["min_khz"] or 0) for c in policy["cores"])
