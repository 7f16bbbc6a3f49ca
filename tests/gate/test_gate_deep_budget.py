"""`sparkenv gate --deep --deadline 2` on an environment holding a shared object whose `.nv_fatbin` is
flooded with the fatbin magic off the 8-byte grid: the gate answers within its deadline and says the
unread part was not judged (an INFO/ERROR line, never a PASS for it)."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import gate_helpers as gh

from sparkenv.cuda import fatbin


def _flooded_so(root: Path) -> Path:
    """A real gcc-compiled shared object with a 16 MiB `.nv_fatbin` whose magic sits at offsets 4 mod 8
    (no code for any GPU, so the reader goes on into the data sections) and a 32 MiB `.ldata` flooded with
    well-formed 16-byte fatbin headers at offsets 3 mod 8, each a step of the reader's own."""
    magic = struct.pack("<I", fatbin.FATBIN_MAGIC)
    nv_fatbin = root / "nv_fatbin.bin"
    nv_fatbin.write_bytes((b"\0\0\0\0" + magic) * (16 << 20 >> 3))
    header = struct.pack("<IHHQ", fatbin.FATBIN_MAGIC, 1, 16, 0)
    ldata = root / "ldata.bin"
    ldata.write_bytes((b"\0\0\0" + header + b"\0" * 5) * ((32 << 20) // 24))
    (root / "p.c").write_text("int plain(void) { return 1; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", "libp.so", "p.c"], cwd=root, check=True, timeout=120)
    out = root / "libflood.so"
    subprocess.run(
        [
            "objcopy",
            "--add-section",
            f".nv_fatbin={nv_fatbin}",
            "--set-section-flags",
            ".nv_fatbin=alloc,load,readonly,data,contents",
            "--add-section",
            f".ldata={ldata}",
            "--set-section-flags",
            ".ldata=alloc,load,data,contents",
            "libp.so",
            str(out),
        ],
        cwd=root,
        check=True,
        timeout=120,
        capture_output=True,
    )
    nv_fatbin.unlink()
    ldata.unlink()
    return out


def test_a_flooded_fatbin_under_gate_deep_stops_at_the_deadline(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    site = next((venv / "lib").glob("python3*/site-packages"))
    pkg = site / "floodpkg"
    pkg.mkdir()
    _flooded_so(tmp_path).rename(pkg / "libflood.so")
    info = site / "floodpkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: floodpkg\nVersion: 1.0\n")
    (info / "RECORD").write_text(
        "floodpkg/libflood.so,,\nfloodpkg-1.0.dist-info/METADATA,,\nfloodpkg-1.0.dist-info/RECORD,,\n"
    )
    # FAKE libnvidia-ml.so.1 saying GB10 (no GPU on the test machine): G7 judges packages only for a known
    # capability; everything else here (the ELF, the venv, the gate process) is real
    nvml = gh.build_nvml_stub(tmp_path / "nvml")
    deadline = 2.0
    report = tmp_path / "report.json"
    ran = subprocess.run(
        [
            sys.executable,
            "-m",
            "sparkenv",
            "gate",
            "--deep",
            "--deadline",
            str(deadline),
            "--python",
            str(venv / "bin" / "python"),
            "--report",
            str(report),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp_path),
            "XDG_CACHE_HOME": str(tmp_path / "cache"),
            "LD_LIBRARY_PATH": str(nvml),
            "STUB_NVML": "gb10",
        },
    )
    assert ran.returncode in (0, 1), ran.stderr
    data = json.loads(report.read_text())
    assert data["context"]["gather_s"] <= deadline + 1.0, data["context"]  # the gate's contract
    g7 = [ln for ln in ran.stdout.splitlines() if ln.startswith("G7 ")]
    # the flooded object: its G7 line says the reader stopped at its budget (headers or seconds) or the
    # gate's deadline came first (on a loaded machine the whole probe may miss it: "did not answer within");
    # never a PASS for what was not read
    deadline_words = ("did not finish", "did not answer within")
    about = [ln for ln in g7 if "floodpkg" in ln or any(w in ln for w in deadline_words)]
    assert about, ran.stdout + ran.stderr
    assert all(" INFO: " in ln or " ERROR: " in ln for ln in about), about
    assert any("stopped after" in ln or any(w in ln for w in deadline_words) for ln in about), about
    assert not any(" PASS: " in ln and "floodpkg" in ln for ln in g7), g7
