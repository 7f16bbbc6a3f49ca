"""Real parts for the tests: ELF files compiled with gcc, dist-info trees, venvs, the CLI as a process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

# The public-index lock fixtures (`lock`, `caches`) of tests/lock/test_lock_pypi.py and
# test_lock_classes_pypi.py; a module that defines its own `lock` or `caches` keeps its own.
pytest_plugins = ["pypi_lock"]


@pytest.fixture(autouse=True, scope="session")
def _a_cache_folder_of_the_suites_own(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """The suite keeps its answers (index pages, metadata, runtime wheels) in a temporary folder, never in
    the invoking user's cache (it wrote ~15 MB there); the CLI processes the tests start inherit it. A
    SPARKENV_CACHE_DIR already set (CI keeping a warm cache) is honoured; a test setting its own keeps it."""
    if os.environ.get("SPARKENV_CACHE_DIR"):
        yield
        return
    os.environ["SPARKENV_CACHE_DIR"] = str(tmp_path_factory.mktemp("sparkenv-cache"))
    try:
        yield
    finally:
        os.environ.pop("SPARKENV_CACHE_DIR", None)


CROSS_GCC = "aarch64-linux-gnu-gcc"
ARCH_GCC = {"x86_64": "gcc", "aarch64": CROSS_GCC} if os.uname().machine == "x86_64" else {"aarch64": "gcc"}


def _compile(cc: str, args: list[str], cwd: Path) -> None:
    if shutil.which(cc) is None:
        pytest.fail(
            f"{cc} is needed for these tests; .ci/run installs it (apt-get install gcc-aarch64-linux-gnu)"
        )
    subprocess.run([cc, *args], cwd=cwd, check=True, timeout=120, capture_output=True)


class ElfFactory:
    """Compiles stub libraries with real sonames and shared objects linked against them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._cache: dict[tuple, Path] = {}

    def stub(self, soname: str, arch: str = "x86_64") -> Path:
        """A shared library whose DT_SONAME is `soname`."""
        key = ("stub", soname, arch)
        if key not in self._cache:
            d = self.root / arch / "stubs"
            d.mkdir(parents=True, exist_ok=True)
            src = d / "stub.c"
            src.write_text("int sparkenv_stub_symbol(void) { return 1; }\n")
            _compile(ARCH_GCC[arch], ["-shared", "-fPIC", f"-Wl,-soname,{soname}", "-o", soname, "stub.c"], d)
            self._cache[key] = d / soname
        return self._cache[key]

    def linked(self, needed: tuple[str, ...] = (), arch: str = "x86_64", soname: str | None = None) -> Path:
        """A shared object whose DT_NEEDED lists `needed` (each a real stub with that soname)."""
        key = ("linked", needed, arch, soname)
        if key not in self._cache:
            stubs = [self.stub(n, arch) for n in needed]
            d = self.root / arch / f"so{len(self._cache)}"
            d.mkdir(parents=True)
            (d / "m.c").write_text("int sparkenv_module(void) { return 2; }\n")
            args = ["-shared", "-fPIC", "-o", "out.so", "m.c"]
            if soname:
                args.append(f"-Wl,-soname,{soname}")
            args += ["-Wl,--no-as-needed", *map(str, stubs)]
            _compile(ARCH_GCC[arch], args, d)
            self._cache[key] = d / "out.so"
        return self._cache[key]

    def executable(self, arch: str) -> Path:
        key = ("exe", arch)
        if key not in self._cache:
            d = self.root / arch / "exe"
            d.mkdir(parents=True)
            (d / "main.c").write_text("int main(void) { return 0; }\n")
            _compile(ARCH_GCC[arch], ["-o", "python3.12", "main.c"], d)
            self._cache[key] = d / "python3.12"
        return self._cache[key]


@pytest.fixture(scope="session")
def elves(tmp_path_factory: pytest.TempPathFactory) -> ElfFactory:
    return ElfFactory(tmp_path_factory.mktemp("elves"))


@dataclass
class Env:
    """A synthetic installed environment: prefix/bin/python3.12 (a real ELF of `arch`) + site-packages."""

    prefix: Path
    site: Path
    arch: str

    def add(
        self,
        name: str,
        version: str,
        requires: list[str] | tuple[str, ...] = (),
        files: dict[str, Path | bytes | str] | None = None,
        record: bool = True,
        wheel_tag: str | None = None,
        direct_url: dict | None = None,
    ) -> Path:
        """Install a distribution the way a wheel installer leaves it: files, METADATA, RECORD (the
        dist-info from tests/artifacts.py, RECORD rows without hashes, as some installers write them)."""
        from artifacts import dist_info

        contents = {
            rel: c.read_bytes() if isinstance(c, Path) else c if isinstance(c, bytes) else c.encode()
            for rel, c in (files or {}).items()
        }
        members = dist_info(
            name,
            version,
            requires,
            contents,
            tag=wheel_tag or f"cp312-cp312-manylinux_2_28_{self.arch}",
            purelib=False,
            direct_url=direct_url,
            hashed=False,
            with_record=record,
        )
        for rel, data in members.items():
            dest = self.site / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
        return self.site / f"{name.replace('-', '_')}-{version}.dist-info"


def make_env(root: Path, elves: ElfFactory, arch: str = "x86_64") -> Env:
    prefix = root / f"venv-{arch}"
    (prefix / "bin").mkdir(parents=True)
    site = prefix / "lib" / "python3.12" / "site-packages"
    site.mkdir(parents=True)
    shutil.copyfile(elves.executable(arch), prefix / "bin" / "python3.12")
    (prefix / "bin" / "python3").symlink_to("python3.12")
    (prefix / "pyvenv.cfg").write_text(
        "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.12.3\n"
    )
    return Env(prefix, site, arch)


@pytest.fixture
def env(tmp_path: Path, elves: ElfFactory) -> Env:
    return make_env(tmp_path, elves, "x86_64")


@pytest.fixture
def arm_env(tmp_path: Path, elves: ElfFactory) -> Env:
    return make_env(tmp_path, elves, "aarch64")


@dataclass
class Result:
    code: int
    out: str
    err: str

    @property
    def lines(self) -> list[str]:
        return self.out.splitlines()

    def line(self, gid: str, subject_word: str) -> str:
        """The one finding line of `gid` that mentions `subject_word`."""
        found = [ln for ln in self.lines if ln.startswith(f"{gid} ") and subject_word in ln]
        assert len(found) == 1, f"expected one {gid} line about {subject_word!r}, got {found}\n{self.out}"
        return found[0]

    def json(self) -> dict:
        return json.loads(self.out)


def sparkenv(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> Result:
    """Run the real CLI as a user does: a separate process, `python -m sparkenv`."""
    full_env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "NVIDIA_PYTORCH_VERSION")}
    full_env.update(env or {})
    proc = subprocess.run(
        [sys.executable, "-m", "sparkenv", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=full_env,
        cwd=cwd,
    )
    result = Result(proc.returncode, proc.stdout, proc.stderr)
    _no_pass_beside_a_fail(args, proc.stdout)
    return result


def _no_pass_beside_a_fail(args: tuple[str, ...], out: str) -> None:
    """Every JSON report any test's CLI run prints is held to one rule (issue 39): no PASS of a G-number
    about a subject beside a FAIL of the same G-number about the same subject — one check saying both yes
    and no. (A G9 PASS "torch pinned in the lock" beside a G1 FAIL of torch's CUDA build is two questions
    with two answers, and stays.)"""
    if not out.startswith("{"):
        return
    try:
        report = json.loads(out)
    except ValueError:
        return
    if not isinstance(report, dict) or not isinstance(report.get("findings"), list):
        return
    found = [f for f in report["findings"] if isinstance(f, dict)]
    failed = {(f.get("id"), f.get("subject")) for f in found if f.get("status") == "FAIL"}
    contradicting = [
        f"{f.get('id')} PASS: {f.get('summary')}"
        for f in found
        if f.get("status") == "PASS" and (f.get("id"), f.get("subject")) in failed
    ]
    assert not contradicting, f"sparkenv {' '.join(args)}: PASS beside FAIL, same subject: {contradicting}"


@pytest.fixture
def run():
    return sparkenv


@pytest.fixture
def clean_root(tmp_path: Path) -> Path:
    """An empty filesystem root for --root, so the host's container and NGC markers do not leak in."""
    root = tmp_path / "root"
    root.mkdir()
    return root


@pytest.fixture
def ctx(tmp_path: Path, elves: ElfFactory, request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """What a row of the rule tables (tests/rules/) builds its stage's facts from; real kernels are
    compiled only when a row asks for them."""
    from stage_facts import Ctx

    return Ctx(tmp_path, elves, lambda: request.getfixturevalue("kernels"))


@pytest.fixture(scope="session")
def kernels(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """Real CUDA kernels compiled by nvcc, each target set once per session for every test that needs
    them (tests/kernel_helpers.py): nvcc is the slowest thing the suite runs."""
    from kernel_helpers import Kernels

    return Kernels(tmp_path_factory.mktemp("kernel-builds"))


@pytest.fixture
def fake_vllm_server(tmp_path):
    """A real process started the way vLLM is (python -m vllm.entrypoints.openai.api_server …)."""
    mod = tmp_path / "srv" / "vllm" / "entrypoints" / "openai"
    mod.mkdir(parents=True)
    for d in (mod, mod.parent, mod.parent.parent):
        (d / "__init__.py").write_text("")
    (mod / "api_server.py").write_text("import time\nprint('ready', flush=True)\ntime.sleep(60)\n")
    procs = []

    def start(fraction: str) -> subprocess.Popen:
        p = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "vllm.entrypoints.openai.api_server",
                "--model",
                "m",
                "--gpu-memory-utilization",
                fraction,
            ],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(tmp_path / "srv")},
        )
        assert p.stdout.readline().strip() == "ready"
        procs.append(p)
        return p

    yield start
    for p in procs:
        p.kill()
        p.wait()
