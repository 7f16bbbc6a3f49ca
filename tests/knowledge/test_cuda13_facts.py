"""Which release first ships CUDA 13 for a CPU is one value, in packages.toml [[cuda13_from]]: the texts
sparkenv prints are built from it, no module writes its own copy, and the real wheels on the index say
the same (network)."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import parse_wheel_filename
from packaging.version import Version

import sparkenv
from sparkenv.environment.markers import marker_environment
from sparkenv.knowledge import packages
from sparkenv.rules import cuda_major, cuda_per_release

# A version written beside a CUDA-13 claim in code: `torch>=2.11`, `from 2.10 on`, `>= 0.48`
_WRITTEN = re.compile(
    r"(torch|bitsandbytes)\s*>=\s*\d+\.\d+|from \d+\.\d+(\.\d+)? on|>= ?0\.4\d|\(\d\d\.\d\d or later\)"
)


def test_no_module_writes_its_own_copy_of_a_first_cuda13_release():
    root = Path(sparkenv.__file__).parent
    hits = []
    for path in root.rglob("*.py"):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _WRITTEN.search(line) and "{" not in line.split(_WRITTEN.search(line).group(0))[0][-3:]:
                hits.append(f"{path.relative_to(root)}:{n}: {line.strip()}")
    assert not hits, "a fact that lives in packages.toml [[cuda13_from]] is written in code:\n" + "\n".join(
        hits
    )


def test_the_ngc_release_in_a_fix_is_the_datas_first_on_the_target_cuda():
    """`use an NGC release on CUDA 13 (YY.MM or later)`: the release is read from cuda.toml's [ngc] table."""
    from sparkenv.cuda import rules as cuda_rules
    from sparkenv.knowledge import cuda
    from sparkenv.rules import g1_declared

    target = cuda_rules.target_major()
    on_target = sorted((r for r, m in cuda().ngc.items() if m == target), key=lambda r: r.split("."))
    assert on_target, "cuda.toml lists no NGC release on the target CUDA"
    assert (
        g1_declared.fix_for("torch-ngc-build", "ngc")
        == f"use an NGC release on CUDA {target} ({on_target[0]} or later)"
    )


def test_printed_texts_carry_the_datas_version(run, tmp_path):
    first = packages().first_cuda13("torch", "aarch64")
    assert first is not None
    below = Version(first.version).release
    pin = f"{below[0]}.{below[1] - 1}.0"
    req = tmp_path / "requirements.txt"
    req.write_text(f"torch=={pin}\n")
    r = run("check", str(req), "--profile", "spark-bare", "--json")
    g1 = {f["subject"]: f for f in r.json()["findings"] if f["id"] == "G1"}["torch"]
    assert g1["status"] == "WARN" and f"below {first.version}" in g1["summary"]
    assert f"torch>={first.version}" in g1["fix"] and first.source in " ".join(g1["evidence"])
    bnb = packages().first_cuda13("bitsandbytes", "aarch64")
    assert bnb is not None
    assert f">= {bnb.version}" in cuda_per_release.upgrade("bitsandbytes", "aarch64")


def _cuda13(names: list[str], meta: str, machine: str) -> bool:
    """A wheel carries CUDA 13: a per-release CUDA 13 library, or a CUDA 13 requirement that applies."""
    if 13 in cuda_per_release.libraries(names):
        return True
    env = marker_environment(machine, "3.12.3")
    for line in meta.splitlines():
        if line.startswith("Requires-Dist:"):
            req = Requirement(line.split(":", 1)[1].strip())
            applies = req.marker is None or req.marker.evaluate({**env, "extra": ""})
            if applies and cuda_major.requirement_major(req.name, str(req.specifier)) == 13:
                return True
    return False


@pytest.mark.network
@pytest.mark.parametrize("fact", packages().cuda13_from, ids=lambda f: f"{f.key}-{f.machine}")
def test_the_index_agrees_with_the_data(fact):
    """The recorded first release's wheel for the CPU carries CUDA 13, the release before it does not."""
    import json
    import urllib.request

    from sparkenv.index import remote_zip
    from sparkenv.index.default_index import installers_default

    page = urllib.request.Request(
        f"{installers_default()}{fact.key}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    with urllib.request.urlopen(page, timeout=60) as resp:
        files = json.load(resp)["files"]
    releases: dict[Version, dict[str, str]] = {}
    for f in files:
        if f["filename"].endswith(".whl") and not f.get("yanked"):
            releases.setdefault(parse_wheel_filename(f["filename"])[1], {})[f["filename"]] = f["url"]
    first = Version(fact.version)
    before = max(v for v in releases if v < first and not v.is_prerelease and not v.local)

    def wheel(version: Version) -> tuple[list[str], str]:
        rel = releases[version]
        fits = [
            f
            for f in rel
            if fact.machine in f
            and any(t.interpreter in ("cp312", "py3") for t in parse_wheel_filename(f)[3])
        ]
        assert fits, f"no {fact.machine} wheel for {fact.key} {version}"
        fh, _ = remote_zip.open_remote(rel[fits[0]], 60)
        with fh, zipfile.ZipFile(fh) as zf:
            names = zf.namelist()
            meta = zf.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        return names, meta

    assert _cuda13(*wheel(first), fact.machine), f"{fact.key} {first} for {fact.machine} shows no CUDA 13"
    assert not _cuda13(*wheel(before), fact.machine), f"{fact.key} {before} already shows CUDA 13"


def test_the_catalogs_fix_prints_the_one_cuda13_index():
    """gotchas.toml's G1 fix names the index as {cuda13_index}: `sparkenv gotchas` prints packages.toml's
    value (test_one_definition holds code and data to that one value)."""
    from sparkenv.gotchas import lookup

    fix = lookup("G1").fix
    assert packages().cuda13_index in fix and "{cuda13_index}" not in fix


def test_the_ngc_table_says_when_and_where_it_was_read():
    from sparkenv.knowledge import cuda

    c = cuda()
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", c.ngc_checked) and c.ngc_source.startswith("https://")
