"""How a built image starts the gate (sparkenv/image/sparkenv.sh): `python3 -I -S`, then gate/launcher.py
makes sys.path as site makes it without running the code lines of the .pth files. The gate judges the
workload's interpreter through sys.path, so a user relies on the same findings either way: real venvs
made by real interpreters, .pth files with path and code lines, the real launcher script, the gate as a
process started both ways (the image's launcher after, the `python3 -I` launcher of main before)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import gate_helpers as gh
import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "sparkenv" / "image" / "sparkenv.sh"
LIB = "/opt/sparkenv/lib"
# the folders on sys.path, in order (what the gate reads: a code line may add other entries, such as an
# editable install's path hook, which name no folder), sys.prefix and sys.exec_prefix (a venv's)
SHOW = (
    "import json, os, sys; "
    "print(json.dumps([[p for p in sys.path if os.path.isdir(p)], sys.prefix, sys.exec_prefix]))"
)
# main's launcher before this change: `python3 -I`, site and every .pth code line run
BEFORE = (
    f"import sys; sys.argv[0] = 'sparkenv'; sys.path.insert(0, {str(ROOT)!r}); "
    "from sparkenv.cli.entry import main; main()"
)


def _interpreters() -> list[str]:
    """This interpreter's base (not a venv) and, where there is one, the distribution's python3 (Debian
    patches its site.py: dist-packages)."""
    found = [getattr(sys, "_base_executable", sys.executable)]
    if os.path.exists("/usr/bin/python3") and os.path.realpath("/usr/bin/python3") != os.path.realpath(
        found[0]
    ):
        found.append("/usr/bin/python3")
    return found


def _venv(where: Path, python: str, system_site: bool = False) -> tuple[Path, Path]:
    """(its python, its site-packages): a venv made by `python -m venv`."""
    cmd = [
        python,
        "-m",
        "venv",
        "--without-pip",
        *(["--system-site-packages"] if system_site else []),
        str(where),
    ]
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)
    site = next(where.glob("lib/python3*/site-packages"))
    return where / "bin" / "python3", site


def _pth_files(site: Path, extra: Path) -> None:
    """Path lines (absolute, relative to the site folder, duplicated, missing), a comment, a blank line
    and a code line that leaves a mark where site runs it."""
    (site / "relative-dir").mkdir(exist_ok=True)
    (site / "10-paths.pth").write_text(
        f"# a comment\n{extra}\n\n{extra}\n/nonexistent/sparkenv-test\nrelative-dir\n"
    )
    (site / "20-code.pth").write_text(
        "import os; os.environ.get('PTH_MARK') and open(os.environ['PTH_MARK'], 'a').write('ran\\n')\n"
    )


def _path_of(python: Path | str, flags: list[str], mark: Path) -> list[object]:
    head = f"import sys; sys.path.insert(0, {str(ROOT)!r});"
    if "-S" in flags:
        head += "from sparkenv.gate.launcher import complete_path; complete_path();"
    proc = subprocess.run(
        [str(python), *flags, "-c", head + SHOW],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PTH_MARK": str(mark)},
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.parametrize("python", _interpreters())
@pytest.mark.parametrize("layout", ["interpreter", "venv", "venv --system-site-packages"])
def test_the_path_is_what_site_makes_without_running_code_lines(
    python: str, layout: str, tmp_path: Path
) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    if layout == "interpreter":
        target: Path | str = python
    else:
        target, site = _venv(tmp_path / "venv", python, system_site=layout.endswith("packages"))
        _pth_files(site, extra)
    with_site = _path_of(target, ["-I"], tmp_path / "mark-site")
    launched = _path_of(target, ["-I", "-S"], tmp_path / "mark-launcher")
    assert launched == with_site
    if layout != "interpreter":
        assert str(extra) in launched[0] and str(site / "relative-dir") in launched[0]
        assert "/nonexistent/sparkenv-test" not in launched[0]
        assert "ran" in (tmp_path / "mark-site").read_text()  # site ran the code line (twice in some venvs)
        assert not (tmp_path / "mark-launcher").exists()  # the launcher did not


def test_complete_path_changes_nothing_where_site_ran() -> None:
    before = list(sys.path)
    from sparkenv.gate.launcher import complete_path

    complete_path()
    assert sys.path == before


def _image_launcher(tmp_path: Path, python: Path) -> Path:
    """The image's sparkenv.sh as the image has it, but for this venv's python3 and this checkout as
    /opt/sparkenv/lib."""
    text = SCRIPT.read_text()
    assert "exec python3 -I -S " in text and LIB in text
    script = tmp_path / "sparkenv"
    script.write_text(text.replace("exec python3 ", f"exec {python} ").replace(LIB, str(ROOT)))
    script.chmod(0o755)
    return script


@pytest.fixture(scope="module")
def nvml_lib(tmp_path_factory):  # type: ignore[no-untyped-def]
    return gh.build_nvml_stub(tmp_path_factory.mktemp("nvml"))


def test_the_gate_judges_the_same_started_either_way(tmp_path: Path, elves, nvml_lib: Path) -> None:  # type: ignore[no-untyped-def]
    """The workload's interpreter is a venv whose torch, CUDA runtime and flash-attn are in a folder a
    .pth path line adds (and sparkenv's own dependencies in another): the image's launcher (-S) finds
    them as the -I launcher does, and the two reports and snapshots agree."""
    import packaging

    python, site = _venv(tmp_path / "venv", getattr(sys, "_base_executable", sys.executable))
    extra = tmp_path / "extra" / "lib" / "python3" / "site-packages"  # a site folder, as resolve counts one
    (extra / "torch" / "lib").mkdir(parents=True)
    (extra / "torch" / "__init__.py").write_text(
        "raise SystemExit('the static gate must not import torch')\n"
    )
    (extra / "torch" / "version.py").write_text("__version__ = '2.11.0+cu130'\ncuda = '13.0'\n")
    shutil.copyfile(elves.linked(("libcudart.so.13",)), extra / "torch" / "lib" / "libtorch_cuda.so")
    (extra / "torch-2.11.0+cu130.dist-info").mkdir()
    (extra / "flash_attn-2.8.3.dist-info").mkdir()
    deps = Path(packaging.__file__).resolve().parents[1]  # packaging, pynvml …: the image's /opt/sparkenv/lib
    (site / "10-paths.pth").write_text(f"{extra}\n{deps}\n")
    (site / "20-code.pth").write_text(
        "import os; os.environ.get('PTH_MARK') and open(os.environ['PTH_MARK'], 'a').write('ran\\n')\n"
    )
    # a folder of its own: the session's stub folder also holds other tests' stubs (a libc.so.6 that
    # /bin/sh would load from LD_LIBRARY_PATH)
    cudart = tmp_path / "cudart"
    cudart.mkdir()
    shutil.copyfile(elves.stub("libcudart.so.13"), cudart / "libcudart.so.13")
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")},
        "LD_LIBRARY_PATH": f"{nvml_lib}:{cudart}",
        "STUB_NVML": "h200",
    }

    def gate(argv: list[str], name: str) -> tuple[dict, dict]:
        dump = tmp_path / f"facts-{name}.json"
        proc = subprocess.run(
            [*argv, "gate", "--json", "--dump-facts", str(dump)],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
            env={
                **env,
                "SPARKENV_CACHE_DIR": str(tmp_path / f"cache-{name}"),
                "PTH_MARK": str(tmp_path / name),
            },
        )
        assert proc.returncode in (0, 1), proc.stderr
        return json.loads(proc.stdout), json.loads(dump.read_text())

    after, after_facts = gate([str(_image_launcher(tmp_path, python))], "after")
    before, before_facts = gate([str(python), "-I", "-c", BEFORE], "before")
    assert "ran" in (tmp_path / "before").read_text() and not (tmp_path / "after").exists()
    # what the gate reads from the workload's interpreter: identical, and the folders of the path lines in it
    for section in ("dists", "torch_static", "kernel_coverage", "loader", "gpu", "host"):
        assert after_facts[section] == before_facts[section], section
    assert after_facts["torch_static"]["version"] == "2.11.0+cu130"
    assert {"torch", "flash-attn", "packaging"} <= set(after_facts["dists"])

    def judged(report: dict) -> list[tuple[str, str, str, str]]:
        """Every finding; G3's and G4's summaries are readings of the moment (memory, power)."""
        return sorted(
            (f["id"], f["status"], f["subject"], "" if f["id"] in ("G3", "G4") else f["summary"])
            for f in report["findings"]
        )

    assert judged(after) == judged(before)
    assert after["verdict"] == before["verdict"]
    g1 = [f["summary"] for f in after["findings"] if f["id"] == "G1" and f["subject"] == "torch"]
    assert g1 and "2.11.0+cu130" in g1[0], after["findings"]
