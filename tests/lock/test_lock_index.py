"""`sparkenv lock` against a local PEP 503 index on 127.0.0.1, with the real `uv pip compile`."""

from __future__ import annotations

import hashlib
import socket
import subprocess
import sys

import pytest
from artifacts import Index, platform_args, serve
from packaging.pylock import Pylock

from sparkenv.core.datafiles import parse_toml

LINUX = 'platform_system == "Linux"'


@pytest.fixture(scope="session")
def index(tmp_path_factory: pytest.TempPathFactory):
    ix = Index(tmp_path_factory.mktemp("index"))
    for arch in ("aarch64", "x86_64"):
        ix.wheel("numpy", "2.1.0", tag=f"cp312-cp312-manylinux_2_17_{arch}")
        ix.wheel(
            "torch",
            "2.9.1+cu128",
            tag=f"cp312-cp312-manylinux_2_28_{arch}",
            requires=[f"nvidia-cuda-runtime-cu12==12.8.90; {LINUX}"],
        )
        ix.wheel(
            "torch",
            "2.11.0",
            tag=f"cp312-cp312-manylinux_2_28_{arch}",
            requires=[f"nvidia-cuda-runtime==13.0.96; {LINUX}"],
        )
        ix.wheel("nvidia-cuda-runtime-cu12", "12.8.90", tag=f"py3-none-manylinux_2_27_{arch}")
        ix.wheel("nvidia-cuda-runtime", "13.0.96", tag=f"py3-none-manylinux_2_27_{arch}")
    ix.wheel("armonly", "1.0", tag="py3-none-manylinux_2_17_aarch64")
    ix.wheel("x86only", "1.0", tag="py3-none-manylinux_2_17_x86_64")
    ix.wheel(
        "mixed",
        "1.0",
        requires=['armonly; platform_machine == "aarch64"', 'x86only; platform_machine == "x86_64"'],
    )
    ix.wheel("peft", "0.19.1", requires=["torch>=2.0", "numpy"])
    ix.wheel("transformers", "4.57.1", requires=["numpy"])
    ix.wheel("transformers", "4.56.2", requires=["numpy"])
    ix.wheel("cupy-cuda12x", "13.0.0", tag="cp312-cp312-manylinux_2_28_aarch64")
    ix.wheel("cupy-user", "1.0", requires=["cupy-cuda12x"])
    ix.sdist("flash-attn", "2.8.3", requires=["torch", "einops"])
    ix.wheel("einops", "0.8.0")
    ix.wheel("needs-fa", "1.0", requires=["flash-attn"])
    ix.sdist("puresdist", "1.0")
    ix.wheel("unsloth-zoo", "2026.7.2", requires=["torch", "numpy"])
    ix.wheel("tyro", "0.9.1")
    ix.wheel(  # like the real unsloth: xformers only on x86_64
        "unsloth",
        "2026.7.2",
        requires=["torch", "unsloth-zoo>=2026.7.2", 'xformers; platform_machine == "x86_64"', "tyro"],
    )
    server = serve(ix)
    yield ix
    server.shutdown()


@pytest.fixture(scope="session")
def caches(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("caches")
    return {"UV_CACHE_DIR": str(root / "uv"), "SPARKENV_CACHE_DIR": str(root / "sparkenv")}


@pytest.fixture
def lock(run, index, caches, tmp_path):
    def _lock(text: str, *args: str, name: str = "requirements.txt"):
        req = tmp_path / name
        req.write_text(text)
        return run(
            "lock",
            str(req),
            "--index-url",
            index.url,
            "--output-dir",
            str(tmp_path / "out"),
            *args,
            env=caches,
        )

    return _lock


def _by(r) -> dict[tuple[str, str], dict]:
    return {(f["id"], f["subject"]): f for f in r.json()["findings"]}


def test_lock_writes_pep751_and_hashed_requirements_in_stages(lock, index, tmp_path):
    r = lock("peft\ntransformers\nunsloth\nunsloth-zoo\n", "--json")
    assert r.code == 0, r.out + r.err
    found = _by(r)
    out = tmp_path / "out"
    pylock, req = out / "pylock.ngc-25-11.toml", out / "requirements.ngc-25-11.txt"
    data = parse_toml(pylock.read_text())
    Pylock.from_dict(data)  # a valid PEP 751 lock
    names = [p["name"] for p in data["packages"]]
    assert "torch" not in names and "peft" in names  # the base's torch is excluded, not replaced
    tool = data["tool"]["sparkenv"]
    assert tool["profile"] == "ngc-25.11" and tool["digest"].startswith("sha256:")
    assert tool["input-hash"].startswith("sha256:") and tool["inputs"] == ["../requirements.txt"]
    stages = {p["name"]: p["tool"]["sparkenv"]["stage"] for p in data["packages"]}
    assert stages["unsloth"] == stages["unsloth-zoo"] == "2-unsloth" and stages["peft"] == "1-packages"
    # the family installs --no-deps, but what it imports is locked too (in the first stage): a closed lock
    assert "tyro" in names and stages["tyro"] == "1-packages" and "xformers" not in names
    # the chain that explains an exclusion
    assert (
        "peft → torch" in found[("G9", "torch")]["summary"]
        and "unsloth → torch" in found[("G9", "torch")]["summary"]
    )
    assert found[("G9", "transformers")]["summary"] == "transformers pinned ==4.57.1 in the lock"
    assert found[("G9", "closure")]["status"] == "PASS"
    text = req.read_text()
    assert text.startswith("# sparkenv: no-deps")
    assert text.index("unsloth==2026.7.2") > text.index("peft==0.19.1")
    # the hashes are those of the files the index serves
    wheel = index.root / "files" / "peft-0.19.1-py3-none-any.whl"
    assert f"--hash=sha256:{hashlib.sha256(wheel.read_bytes()).hexdigest()}" in text
    # pip itself downloads every file for the target with hashes verified
    dl = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--require-hashes",
            "--only-binary=:all:",
            *platform_args("aarch64"),
            "--python-version",
            "3.12",
            "-q",
            "--disable-pip-version-check",
            "-d",
            str(tmp_path / "dl"),
            "-r",
            str(req),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert dl.returncode == 0, dl.stderr
    assert sorted(p.name for p in (tmp_path / "dl").iterdir()) == sorted(
        w["url"].rsplit("/", 1)[-1] for p in data["packages"] for w in p["wheels"]
    )
    # the lock's own requirements file passes sparkenv check
    assert lock(text, name="again.txt")  # (resolves fine too)
    from sparkenv.resolve.check import check

    assert check([str(req)], None, None).verdict.value == "ready"


def test_cuda12_in_resolved_set_fails_with_chain_and_writes_nothing(lock, tmp_path):
    r = lock("peft\ntorch<2.11\n", "--profile", "spark-bare", "--json")  # 2.9.1+cu128 then
    assert r.code == 1
    g1 = _by(r)[("G1", "nvidia-cuda-runtime-cu12")]
    assert g1["status"] == "FAIL" and "via torch → nvidia-cuda-runtime-cu12" in g1["summary"]
    assert _by(r)[("G1", "torch")]["status"] == "FAIL"
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def test_cuda13_resolved_set_passes(lock, tmp_path):
    r = lock("peft\ntorch==2.11.0\n", "--profile", "spark-bare", "--json")
    assert r.code == 0, r.out
    assert _by(r)[("G1", "nvidia-cuda-runtime")]["status"] == "PASS"
    assert (tmp_path / "out" / "pylock.spark-bare.toml").is_file()


def test_the_lock_and_its_report_files_are_written_together_as_shown(lock, tmp_path):
    """--report, --junit and --sarif beside a written lock: the report as stdout shows it (--ignore
    applied), valid against the shipped schema, in the lock's all-or-none write."""
    import json
    import xml.etree.ElementTree as ET
    from importlib import resources

    import jsonschema

    schema = json.loads(resources.files("sparkenv").joinpath("data", "report.schema.json").read_text())
    report, junit, sarif = (tmp_path / f"lock.{ext}" for ext in ("json", "xml", "sarif"))
    r = lock(
        "peft\ntorch==2.11.0\n",
        *("--profile", "spark-bare", "--json", "--ignore", "G1"),
        *("--report", str(report), "--junit", str(junit), "--sarif", str(sarif)),
    )
    assert r.code == 0, r.err
    data = r.json()
    jsonschema.validate(data, schema)
    assert (
        data["command"] == "lock" and data["findings"] and not any(f["id"] == "G1" for f in data["findings"])
    )
    assert json.loads(report.read_text()) == data
    cases = [c.get("classname") for c in ET.parse(junit).getroot().iter("testcase")]
    assert len(cases) == len(data["findings"]) and not any(c.endswith(".G1") for c in cases)
    assert json.loads(sarif.read_text())["version"] == "2.1.0"
    assert (tmp_path / "out" / "pylock.spark-bare.toml").is_file()


def test_cuda12_name_pulled_in_by_another_package(lock):
    r = lock("cupy-user\n", "--json")
    g1 = _by(r)[("G1", "cupy-cuda12x")]
    assert r.code == 1 and "cupy-user → cupy-cuda12x" in g1["summary"] and "cupy-cuda13x" in g1["fix"]


def test_the_lock_is_written_exactly_when_the_shown_verdict_lets_it(lock, tmp_path):
    """`verdict: ready` means a lock was written: a FAIL the user ignores or waives does not withhold the
    lock (the write follows the report as shown), and one left in place still does."""
    pylock = tmp_path / "out" / "pylock.ngc-25-11.toml"
    r = lock("cupy-user\n", "--json")
    assert r.code == 1 and _by(r)[("G1", "cupy-cuda12x")]["status"] == "FAIL" and not pylock.exists()
    for how in (("--ignore", "G1"), ("--waive", "G1:cupy-cuda12x")):
        r = lock("cupy-user\n", "--json", *how)
        assert r.code == 0 and r.json()["verdict"] == "ready", (how, r.out, r.err)
        assert pylock.is_file() and "cupy-cuda12x" in pylock.read_text(), how
        assert any(
            f["id"] == "G9" and f["status"] == "PASS" and "wrote" in f["summary"]
            for f in r.json()["findings"]
        )
        pylock.unlink()
    r = lock("cupy-user\n", "--json", "--ignore", "G2")  # ignoring something else changes nothing
    assert r.code == 1 and not pylock.exists()


def test_sdist_that_compiles_cuda_fails_base_provided_passes(lock):
    r = lock("needs-fa\n", "--profile", "spark-bare", "--json")
    g2 = _by(r)[("G2", "flash-attn")]
    assert r.code == 1 and g2["status"] == "FAIL" and "needs-fa → flash-attn" in g2["summary"]
    r = lock("needs-fa\n", "--json")  # ngc-25.11 provides flash-attn: excluded, nothing compiles
    assert r.code == 0 and "needs-fa → flash-attn excluded" in _by(r)[("G9", "flash-attn")]["summary"]


def test_other_sdists_warn(lock):
    r = lock("puresdist\n", "--json")
    assert r.code == 0 and _by(r)[("G2", "puresdist")]["status"] == "WARN"


def test_pin_that_replaces_base_torch_is_refused_before_resolution(lock, tmp_path):
    r = lock("torch==2.9.1+cu128\n", "--json")
    assert r.code == 1 and _by(r)[("G9", "torch")]["status"] == "FAIL"
    assert not (tmp_path / "out").exists()


def test_markers_resolved_for_the_target_platform(lock, tmp_path):
    r = lock("mixed\n", "--json")
    names = [
        p["name"] for p in parse_toml((tmp_path / "out" / "pylock.ngc-25-11.toml").read_text())["packages"]
    ]
    assert r.code == 0 and "armonly" in names and "x86only" not in names  # this host is x86_64
    r = lock("mixed\n", "--platform", "linux/amd64", "--json")
    names = [
        p["name"] for p in parse_toml((tmp_path / "out" / "pylock.ngc-25-11.toml").read_text())["packages"]
    ]
    assert r.code == 0 and "x86only" in names and "armonly" not in names


def test_check_flags_stale_lock(lock, run, tmp_path, caches):
    assert lock("transformers==4.57.1\n").code == 0
    out, req = tmp_path / "out", tmp_path / "requirements.txt"
    r = run("lock", str(req), "--check", "--output-dir", str(out))
    assert r.code == 0 and "is current" in r.out
    r = run("lock", "--check", "--output-dir", str(out))  # every lock, against the inputs recorded in it
    assert r.code == 0 and "is current" in r.out
    req.write_text("transformers==4.56.2\n")
    r = run("lock", str(req), "--check", "--output-dir", str(out))
    assert r.code == 1 and "stale: inputs changed" in r.out
    r = run("lock", "--check", "--output-dir", str(out))
    assert r.code == 1 and "stale" in r.out
    r = run("lock", str(req), "--check", "--output-dir", str(tmp_path / "elsewhere"))
    assert r.code == 1 and "does not exist" in r.out


def test_a_comment_only_edit_leaves_the_lock_current(lock, run, tmp_path, caches):
    """Staleness compares parsed requirements, as uv does, not bytes: a comment, a blank line, spacing,
    the order of lines and a name's spelling change nothing; a changed specifier does. Before, the first
    edit below made the lock stale."""
    assert lock("transformers==4.57.1\nnumpy\n").code == 0
    out, req = tmp_path / "out", tmp_path / "requirements.txt"
    req.write_text("# pinned for the workshop\n\nNumPy\ntransformers == 4.57.1   # the tokenizer fix\n")
    for args in ([str(req), "--check", "--output-dir", str(out)], ["--check", "--output-dir", str(out)]):
        r = run("lock", *args)
        assert r.code == 0 and "is current" in r.out, r.out + r.err
    req.write_text("# pinned for the workshop\n\nNumPy\ntransformers == 4.56.2\n")
    r = run("lock", str(req), "--check", "--output-dir", str(out))
    assert r.code == 1 and "stale: inputs changed" in r.out, r.out


def test_the_one_lock_present_is_the_default(lock, run, tmp_path, caches):
    """`lock --check INPUT` with no profile named: the default profile's lock is not there, the one lock
    present (another profile's) is the one checked; with two others, one line lists them (exit 2).
    Before: "pylock.ngc-25-11.toml does not exist" (exit 1) with a current lock beside it."""
    assert lock("transformers==4.57.1\n", "--profile", "ngc-26.01").code == 0
    out, req = tmp_path / "out", tmp_path / "requirements.txt"
    r = run("lock", str(req), "--check", "--output-dir", str(out))
    assert r.code == 0 and "pylock.ngc-26-01.toml is current" in r.out, r.out + r.err
    assert lock("transformers==4.57.1\n", "--profile", "ngc-25.09").code == 0
    (out / "pylock.ngc-25-11.toml").unlink(missing_ok=True)
    r = run("lock", str(req), "--check", "--output-dir", str(out))
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1, r.err
    assert "2 other locks: pylock.ngc-25-09.toml, pylock.ngc-26-01.toml" in r.err, r.err


def test_unreachable_index_is_exit_3_and_leaves_no_file(run, tmp_path, caches):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    req = tmp_path / "requirements.txt"
    req.write_text("peft\n")
    r = run(
        "lock",
        str(req),
        "--index-url",
        f"http://127.0.0.1:{port}/simple/",
        "--output-dir",
        str(tmp_path / "out"),
        env={**caches, "UV_HTTP_RETRIES": "0"},
    )
    assert r.code == 3 and "unreachable" in r.err and len(r.err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_unsatisfiable_is_a_finding_exit_1(lock, tmp_path):
    # no version in range is a finding about the requirement (tests/lock/test_lock_unresolvable.py), not
    # bad usage: exit 1, nothing written
    r = lock("peft==9.9\n")
    assert r.code == 1 and r.line("G9", "peft").startswith("G9 FAIL: peft") and not r.err.strip()
    assert not (tmp_path / "out" / "pylock.ngc-25-11.toml").exists()


def test_existing_lock_survives_a_failed_run(lock, tmp_path):
    assert lock("transformers==4.57.1\n").code == 0
    before = (tmp_path / "out" / "pylock.ngc-25-11.toml").read_text()
    assert lock("peft==9.9\n").code == 1
    assert lock("cupy-user\n").code == 1
    assert (tmp_path / "out" / "pylock.ngc-25-11.toml").read_text() == before
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "pylock.ngc-25-11.toml",
        "requirements.ngc-25-11.txt",
    ]
