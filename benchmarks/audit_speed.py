"""How fast is `sparkenv audit` next to `pip check` and `pip list` on a large environment?

The script builds a synthetic environment that pip itself recognises — a real venv (`python -m venv`,
with pip) whose site-packages holds a few hundred `.dist-info` distributions written directly as files:
METADATA with Requires-Dist between them (so `pip check` has real work), RECORD listing every file,
INSTALLER and WHEEL. Across them lie about 850 real ELF shared objects built with gcc (stub CUDA
libraries with their real sonames, and consumer libraries linked against them), several of them grown
to hundreds of MB with a sparse hole, and about 62,000 small Python files. Then it times, interleaved,

    <python> -m sparkenv audit <venv> --json
    <venv>/bin/python -m pip check
    <venv>/bin/python -m pip list

and prints the medians, the ratios and whether the targets (audit <= 0.5 x pip check, audit <= 1.0 x
pip list) are met. Standard library only; needs gcc on PATH and sparkenv importable by the interpreter
that runs this script (or by --audit-python).

    python benchmarks/audit_speed.py --runs 7
    python benchmarks/audit_speed.py --workdir /var/tmp/sparkenv-bench --json
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import csv
import hashlib
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

FORMAT = 2  # bump when the generated environment changes, so cached work folders are rebuilt
MARKER = "sparkenv-bench-env.json"
MiB = 1 << 20
TARGET_VS_CHECK = 0.5
TARGET_VS_LIST = 1.0
FLOOR_DISTS = 200
FLOOR_SHARED_OBJECTS = 800

# Stub CUDA libraries: (file name = soname, exported symbol, providing distribution, version, folder).
PROVIDERS = (
    ("libcudart.so.13", "cudaRuntimeGetVersion", "nvidia-cuda-runtime", "13.0.96", "nvidia/cu13/lib"),
    ("libcublas.so.13", "cublasCreate_v2", "nvidia-cublas", "13.1.0.3", "nvidia/cu13/lib"),
    ("libcufft.so.12", "cufftPlan1d", "nvidia-cufft", "12.0.0.61", "nvidia/cu13/lib"),
    ("libcusparse.so.12", "cusparseCreate", "nvidia-cusparse", "12.6.3.3", "nvidia/cu13/lib"),
    ("libnccl.so.2", "ncclGetVersion", "nvidia-nccl-cu13", "2.28.7", "nvidia/nccl/lib"),
)
# Consumer libraries: template name -> the stub libraries it links (DT_NEEDED); "plain" links none.
CONSUMERS = {
    "plain": (),
    "rt": ("libcudart.so.13",),
    "blas": ("libcudart.so.13", "libcublas.so.13"),
    "fft": ("libcudart.so.13", "libcufft.so.12"),
    "sparse": ("libcudart.so.13", "libcublas.so.13", "libcusparse.so.12"),
    "nccl": ("libcudart.so.13", "libnccl.so.2"),
}
# Sparse growth, in MiB, of some files: the audit must read headers only, never whole files.
PROVIDER_SIZES_MIB = {
    "libcublas.so.13": 650,
    "libcufft.so.12": 300,
    "libcusparse.so.12": 350,
    "libnccl.so.2": 300,
}
TORCH_BIG_MIB = {"libtorch_cuda.so": 800, "libtorch_cpu.so": 500}
FLASH_BIG_MIB = 400


@dataclass(frozen=True)
class Spec:
    """Everything that decides the generated environment; a cached work folder must match it."""

    format: int
    dists: int
    py_files: int
    shared_objects: int
    seed: int
    python: str  # the interpreter the venv was made from
    upgrade_pip: bool


@dataclass
class EnvStats:
    venv: str
    site_packages: str
    distributions: int  # .dist-info folders in site-packages
    synthetic_distributions: int
    elf_shared_objects: int  # files named like shared objects that start with the ELF magic
    files: int  # regular files under site-packages
    apparent_bytes: int
    disk_bytes: int
    venv_files: int
    venv_apparent_bytes: int
    venv_disk_bytes: int
    pip_version: str
    venv_python: str
    build_seconds: float | None = None


@dataclass
class Timing:
    name: str
    argv: list[str]
    seconds: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)


# ---------------------------------------------------------------------------------------------- building


def _run(argv: list[str], cwd: Path | None = None, timeout: float = 600) -> str:
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise SystemExit(
            f"FAILED ({proc.returncode}): {' '.join(argv)}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        )
    return proc.stdout


def build_stubs(out: Path) -> dict[str, Path]:
    """Compile the stub CUDA libraries and the consumer libraries; return template name -> path."""
    out.mkdir(parents=True, exist_ok=True)
    gcc = shutil.which("gcc")
    if gcc is None:
        raise SystemExit("gcc not found on PATH: it builds the ELF shared objects")
    templates: dict[str, Path] = {}
    for soname, symbol, *_ in PROVIDERS:
        src = out / f"{soname}.c"
        src.write_text(f"int {symbol}(int *v) {{ if (v) *v = 13000; return 0; }}\n", encoding="utf-8")
        _run([gcc, "-shared", "-fPIC", "-O1", f"-Wl,-soname,{soname}", "-o", soname, src.name], cwd=out)
        templates[soname] = out / soname
    for name, needs in CONSUMERS.items():
        calls = "".join(f"    r += {sym}(0);\n" for so, sym, *_ in PROVIDERS if so in needs)
        decls = "".join(f"int {sym}(int *v);\n" for so, sym, *_ in PROVIDERS if so in needs)
        src = out / f"consumer_{name}.c"
        src.write_text(
            "#include <math.h>\n"
            f"{decls}"
            f"static double table_{name}[64];\n"
            f"int sparkbench_{name}(double x) {{\n    int r = 0;\n{calls}"
            f"    for (int i = 0; i < 64; i++) table_{name}[i] = sin(x * i);\n"
            "    return r + (int)table_" + name + "[3];\n}\n"
            f"void *PyInit__{name}(void) {{ return 0; }}\n",
            encoding="utf-8",
        )
        target = f"consumer_{name}.so"
        _run(
            [gcc, "-shared", "-fPIC", "-O1", "-o", target, src.name, "-Wl,--no-as-needed"]
            + [f"./{so}" for so in needs]
            + ["-lm"],
            cwd=out,
        )
        templates[name] = out / target
    return templates


_HASHES: dict[tuple[str, int], str] = {}  # (template, size) -> RECORD hash of its copies


def _b64_sha256(digest: bytes) -> str:
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


class DistWriter:
    """Write one distribution's files and its .dist-info, RECORD last."""

    def __init__(self, site: Path, name: str, version: str) -> None:
        self.site = site
        self.name = name
        self.version = version
        self.dist_info = f"{name.replace('-', '_')}-{version}.dist-info"
        self.rows: list[tuple[str, str, str]] = []

    def text(self, rel: str, content: str) -> None:
        data = content.encode("utf-8")
        path = self.site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        self.rows.append((rel, f"sha256={_b64_sha256(hashlib.sha256(data).digest())}", str(len(data))))

    def shared_object(self, rel: str, template: Path, size_mib: int = 0) -> None:
        """A copy (not a link) of a compiled template, optionally grown sparsely to size_mib MiB."""
        path = self.site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(template, path)
        real = template.stat().st_size
        size = max(real, size_mib * MiB)
        if size > real:
            # Zeros after the original bytes: e_shoff/e_phoff still point inside them, so the ELF stays
            # valid; ftruncate leaves a hole, so the file costs no disk beyond its real bytes.
            os.truncate(path, size)
        key = (str(template), size)
        if key not in _HASHES:
            _HASHES[key] = _hash_file(path)
        digest = _HASHES[key]
        os.chmod(path, 0o755)
        self.rows.append((rel, f"sha256={digest}", str(size)))

    def finish(self, requires: list[str], extras: list[str], summary: str, tag: str) -> None:
        meta = [
            "Metadata-Version: 2.1",
            f"Name: {self.name}",
            f"Version: {self.version}",
            f"Summary: {summary}",
            "License: Apache-2.0",
            "Requires-Python: >=3.9",
        ]
        meta += [f"Provides-Extra: {e}" for e in extras]
        meta += [f"Requires-Dist: {r}" for r in requires]
        body = f"\n# {self.name}\n\nA synthetic distribution written by sparkenv's audit benchmark.\n"
        self.text(f"{self.dist_info}/METADATA", "\n".join(meta) + "\n" + body)
        self.text(f"{self.dist_info}/INSTALLER", "pip\n")
        pure = tag.endswith("-any")
        self.text(
            f"{self.dist_info}/WHEEL",
            "Wheel-Version: 1.0\nGenerator: sparkenv-bench\n"
            f"Root-Is-Purelib: {'true' if pure else 'false'}\nTag: {tag}\n",
        )
        top = "nvidia" if self.name.startswith("nvidia") else self.name.replace("-", "_")
        self.text(f"{self.dist_info}/top_level.txt", top + "\n")
        record = self.site / self.dist_info / "RECORD"
        with open(record, "w", encoding="utf-8", newline="") as fh:
            writer = csv.writer(fh, lineterminator="\n")
            writer.writerows(self.rows)
            writer.writerow((f"{self.dist_info}/RECORD", "", ""))


def _hash_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(8 * MiB):
            h.update(chunk)
    return _b64_sha256(h.digest())


def _py_source(rng: random.Random, module: str) -> str:
    funcs = "".join(
        f"\n\ndef {module}_f{i}(x: int, y: int = {i}) -> int:\n"
        f'    """Return a mix of x and y ({rng.random():.6f})."""\n'
        f"    return (x * {rng.randint(1, 999)} + y) % {rng.randint(1000, 99999)}\n"
        for i in range(rng.randint(1, 12))
    )
    return f'"""Module {module}."""\n\nfrom __future__ import annotations\n\nVALUE = {rng.random()!r}{funcs}'


def _split(total: int, parts: int, rng: random.Random, alpha: float) -> list[int]:
    """Split total into parts with a heavy tail (a few big packages, many small ones)."""
    weights = [rng.paretovariate(alpha) for _ in range(parts)]
    scale = total / sum(weights)
    counts = [int(w * scale) for w in weights]
    for i in range(total - sum(counts)):
        counts[i % parts] += 1
    return counts


def _py_files(w: DistWriter, pkg: str, count: int, rng: random.Random) -> None:
    per_folder = 40
    for i in range(count):
        sub = i // per_folder
        folder = pkg if sub == 0 else f"{pkg}/sub{sub // 10}/mod{sub % 10}"
        name = "__init__" if i % per_folder == 0 else f"m{i % per_folder:02d}"
        ext = ".pyi" if i % 23 == 7 else ".py"
        w.text(f"{folder}/{name}{ext}", _py_source(rng, f"{pkg}_{i}"))


def build_environment(work: Path, spec: Spec) -> EnvStats:
    started = time.perf_counter()
    venv = work / "venv"
    stubs = work / "stubs"
    for old in (venv, stubs):
        if old.exists():
            shutil.rmtree(old)
    argv = [spec.python, "-m", "venv"] + (["--upgrade-deps"] if spec.upgrade_pip else []) + [str(venv)]
    _run(argv)
    templates = build_stubs(stubs)
    site = find_site_packages(venv)
    pytag = site.parent.name.replace("python", "").replace(".", "")  # "311"
    arch = platform.machine()
    ext_suffix = f".cpython-{pytag}-{arch}-linux-gnu.so"
    bin_tag = f"cp{pytag}-cp{pytag}-manylinux_2_17_{arch}.manylinux2014_{arch}"
    rng = random.Random(spec.seed)

    n_generic = spec.dists - len(PROVIDERS) - 2  # 2: synth-torch, synth-flash
    if n_generic < 10:
        raise SystemExit(f"--dists {spec.dists} is too small (at least {len(PROVIDERS) + 12})")
    torch_py = spec.py_files // 5  # torch holds about a fifth of a real CUDA environment's files
    py_counts = _split(spec.py_files - torch_py, n_generic + 1, rng, 1.3)
    py_counts.sort(reverse=True)
    flash_py, generic_py = py_counts[-1], py_counts[:-1]
    rng.shuffle(generic_py)
    torch_so, flash_so = 140, 3
    n_so_generic = spec.shared_objects - len(PROVIDERS) - torch_so - flash_so
    if n_so_generic < 0:
        raise SystemExit(f"--shared-objects {spec.shared_objects} is too small")
    with_so = max(1, int(n_generic * 0.6))
    so_counts = _split(n_so_generic, with_so, rng, 1.6) + [0] * (n_generic - with_so)
    rng.shuffle(so_counts)

    # The CUDA runtime wheels, with the layout pip's nvidia-* wheels use.
    pins: list[str] = []
    for soname, _, dist, version, folder in PROVIDERS:
        w = DistWriter(site, dist, version)
        w.shared_object(f"{folder}/{soname}", templates[soname], PROVIDER_SIZES_MIB.get(soname, 0))
        w.text(f"{folder.rsplit('/', 1)[0]}/include/{soname.split('.')[0]}.h", f"/* {soname} */\n")
        w.finish([], [], f"{dist} stub", f"py3-none-manylinux_2_17_{arch}")
        pins.append(f'{dist}=={version}; platform_system == "Linux"')

    # A torch-like distribution: big libraries, many extension modules, pins on the runtime wheels.
    w = DistWriter(site, "synth-torch", "2.11.0")
    for name, mib in TORCH_BIG_MIB.items():
        w.shared_object(f"synth_torch/lib/{name}", templates["blas" if "cuda" in name else "plain"], mib)
    kinds = list(CONSUMERS)
    for i in range(torch_so - len(TORCH_BIG_MIB)):
        kind = kinds[i % len(kinds)]
        if i % 3 == 0:
            rel = f"synth_torch/lib/libsynth_torch_{kind}{i}.so"
        else:
            rel = f"synth_torch/_ops/m{i // 20}/_C{i}{ext_suffix}"
        w.shared_object(rel, templates[kind])
    _py_files(w, "synth_torch", torch_py, rng)
    w.finish([*pins, "synth-filelock", "synth-typing-extensions>=4.10.0"], [], "torch-like", bin_tag)

    w = DistWriter(site, "synth-flash", "2.8.3")
    w.shared_object(f"synth_flash/flash_attn_2_cuda{ext_suffix}", templates["blas"], FLASH_BIG_MIB)
    w.shared_object(f"synth_flash/_fused{ext_suffix}", templates["rt"])
    w.shared_object("synth_flash.libs/libgomp-a34b3233.so.1.0.0", templates["plain"])
    _py_files(w, "synth_flash", flash_py, rng)
    w.finish(["synth-torch>=2.4", "synth-einops"], [], "flash-attn-like", bin_tag)

    # Generic distributions with Requires-Dist on earlier ones (versions always satisfied).
    generic: list[tuple[str, str]] = [
        ("synth-filelock", "3.20.0"),
        ("synth-typing-extensions", "4.15.0"),
        ("synth-einops", "0.8.1"),
    ]
    generic += [(f"synth-pkg-{i:03d}", f"{1 + i % 3}.{i % 17}.{i % 5}") for i in range(n_generic - 3)]
    for idx, (name, version) in enumerate(generic):
        w = DistWriter(site, name, version)
        pkg = name.replace("-", "_")
        for j in range(so_counts[idx]):
            kind = kinds[(idx + j) % len(kinds)]
            if j % 4 == 3:
                rel = f"{pkg}.libs/lib{pkg}_{j}-{rng.getrandbits(32):08x}.so.1.{j % 7}"
            elif j % 4 == 2:
                rel = f"{pkg}/lib/lib{pkg}{j}.so.1"
            else:
                rel = f"{pkg}/_ext{j}{ext_suffix}" if j else f"{pkg}/_C{ext_suffix}"
            w.shared_object(rel, templates[kind])
        _py_files(w, pkg, generic_py[idx], rng)
        w.text(f"{pkg}/py.typed", "")
        requires: list[str] = []
        earlier = generic[:idx]
        for dep, dep_version in rng.sample(earlier, min(len(earlier), rng.randint(0, 6))):
            major = int(dep_version.split(".")[0])
            form = rng.randint(0, 4)
            if form == 0:
                requires.append(dep)
            elif form == 1:
                requires.append(f"{dep}>={major}.0,<{major + 1}")
            elif form == 2:
                requires.append(f'{dep}>={dep_version}; python_version >= "3.9"')
            elif form == 3:
                requires.append(f"{dep}~={major}.0")
            else:
                requires.append(f'{dep}!=0.0.1; sys_platform == "linux"')
        if rng.random() < 0.2:
            requires.append('synth-torch>=2.0; extra == "torch"')
        if rng.random() < 0.1:
            requires.append(f'{name}[torch]; extra == "all"')
        if so_counts[idx] and rng.random() < 0.3:
            requires.append(pins[idx % len(pins)])
        tag = bin_tag if so_counts[idx] else "py3-none-any"
        w.finish(requires, ["torch", "all"], f"synthetic package {name}", tag)

    stats = measure(venv, spec.dists)
    stats.build_seconds = round(time.perf_counter() - started, 1)
    return stats


def find_site_packages(venv: Path) -> Path:
    found = sorted((venv / "lib").glob("python3.*/site-packages"))
    if len(found) != 1:
        raise SystemExit(f"{venv}: expected one lib/python3.*/site-packages, found {found}")
    return found[0]


def _walk(root: Path) -> Iterator[os.DirEntry[str]]:
    stack = [str(root)]
    while stack:
        with os.scandir(stack.pop()) as it:
            for entry in it:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    yield entry


def _is_elf(path: str) -> bool:
    with open(path, "rb") as fh:
        return fh.read(4) == b"\x7fELF"


def measure(venv: Path, synthetic: int) -> EnvStats:
    site = find_site_packages(venv)
    files = elf = apparent = disk = 0
    for entry in _walk(site):
        st = entry.stat(follow_symlinks=False)
        files += 1
        apparent += st.st_size
        disk += st.st_blocks * 512
        name = entry.name
        if (name.endswith(".so") or ".so." in name) and _is_elf(entry.path):
            elf += 1
    venv_files = venv_apparent = venv_disk = 0
    for entry in _walk(venv):
        st = entry.stat(follow_symlinks=False)
        venv_files += 1
        venv_apparent += st.st_size
        venv_disk += st.st_blocks * 512
    py = venv / "bin" / "python"
    return EnvStats(
        venv=str(venv),
        site_packages=str(site),
        distributions=sum(1 for n in os.listdir(site) if n.endswith(".dist-info")),
        synthetic_distributions=synthetic,
        elf_shared_objects=elf,
        files=files,
        apparent_bytes=apparent,
        disk_bytes=disk,
        venv_files=venv_files,
        venv_apparent_bytes=venv_apparent,
        venv_disk_bytes=venv_disk,
        pip_version=_run([str(py), "-m", "pip", "--version"]).split()[1],
        venv_python=_run([str(py), "-c", "import platform; print(platform.python_version())"]).strip(),
    )


def prepare(work: Path, spec: Spec, rebuild: bool, log: bool) -> EnvStats:
    marker = work / MARKER
    if marker.is_file() and not rebuild:
        try:
            cached = json.loads(marker.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            cached = {}
        if cached.get("spec") == asdict(spec) and (work / "venv" / "bin" / "python").exists():
            if log:
                print(f"reusing the environment in {work} ({MARKER} matches)", file=sys.stderr)
            stats = measure(work / "venv", spec.dists)
            stats.build_seconds = cached.get("stats", {}).get("build_seconds")
            return stats
    elif work.exists() and any(work.iterdir()) and not marker.is_file():
        raise SystemExit(
            f"{work} is not empty and holds no {MARKER}: not building over someone else's files "
            "(give an empty or new --workdir)"
        )
    work.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        marker.unlink()
    if log:
        print(f"building the synthetic environment in {work} …", file=sys.stderr)
    stats = build_environment(work, spec)
    marker.write_text(json.dumps({"spec": asdict(spec), "stats": asdict(stats)}, indent=2) + "\n", "utf-8")
    return stats


# ---------------------------------------------------------------------------------------------- timing


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("VIRTUAL_ENV", None)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"  # no network call to PyPI inside the timed pip runs
    env["PIP_NO_INPUT"] = "1"
    env["PYTHONUTF8"] = "1"
    return env


def _audit_context(proc: subprocess.CompletedProcess[str]) -> dict[str, object]:
    if proc.returncode not in (0, 1):  # 1: a FAIL finding; anything else: the audit did not run
        raise SystemExit(
            f"sparkenv audit exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        )
    try:
        report = json.loads(proc.stdout)
    except ValueError:
        raise SystemExit(
            f"sparkenv audit printed no JSON:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        ) from None
    context = report.get("context")
    if not isinstance(context, dict):
        raise SystemExit("sparkenv audit's JSON report has no context object")
    return context


def _check(name: str, proc: subprocess.CompletedProcess[str], stats: EnvStats) -> float | None:
    """Fail loudly when a command did not do the work it is timed for; return the audit's own timer."""
    if name == "audit":
        ctx = _audit_context(proc)
        so, dists = ctx.get("shared_objects"), ctx.get("distributions")
        want_so = max(FLOOR_SHARED_OBJECTS, stats.elf_shared_objects)
        want_dists = max(FLOOR_DISTS, stats.distributions)
        if not isinstance(so, int) or not isinstance(dists, int) or so < want_so or dists < want_dists:
            raise SystemExit(
                f"the audit did not read the environment: it saw {dists} distributions and {so} shared "
                f"objects, expected at least {want_dists} and {want_so}"
            )
        seconds = ctx.get("seconds")
        return float(seconds) if isinstance(seconds, (int, float)) else None
    if proc.returncode != 0:
        raise SystemExit(
            f"pip {name} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        )
    if name == "check" and "No broken requirements found" not in proc.stdout:
        raise SystemExit(f"pip check found problems in the synthetic environment:\n{proc.stdout[-3000:]}")
    if name == "list":
        listed = len(proc.stdout.splitlines()) - 2  # two header lines
        if listed < stats.distributions:
            raise SystemExit(f"pip list showed {listed} distributions, expected {stats.distributions}")
    return None


def time_commands(
    stats: EnvStats, audit_python: str, runs: int, warmup: int, timeout: float, log: bool
) -> tuple[dict[str, Timing], list[float]]:
    venv_py = str(Path(stats.venv) / "bin" / "python")
    timings = {
        "audit": Timing("sparkenv audit", [audit_python, "-m", "sparkenv", "audit", stats.venv, "--json"]),
        "check": Timing("pip check", [venv_py, "-m", "pip", "check"]),
        "list": Timing("pip list", [venv_py, "-m", "pip", "list"]),
    }
    env = _env()
    cwd = Path(stats.venv).parent  # neutral: `-m` puts the working folder first on sys.path
    order = list(timings)
    audit_self: list[float] = []
    for round_no in range(-warmup, runs):
        shift = round_no % len(order)
        for key in order[shift:] + order[:shift]:  # rotate, so no command always runs first or last
            t = timings[key]
            started = time.perf_counter()
            try:
                proc = subprocess.run(
                    t.argv, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd
                )
            except subprocess.TimeoutExpired:
                raise SystemExit(f"{t.name} ran past --timeout {timeout:g} s: {' '.join(t.argv)}") from None
            elapsed = time.perf_counter() - started
            own = _check(key, proc, stats)
            if round_no < 0:
                continue
            t.seconds.append(elapsed)
            if own is not None:
                audit_self.append(own)
        if log:
            label = f"warm-up {round_no + warmup + 1}" if round_no < 0 else f"run {round_no + 1}/{runs}"
            last = "  ".join(f"{t.name} {t.seconds[-1]:.3f}s" for t in timings.values() if t.seconds)
            print(f"{label}: {last if round_no >= 0 else 'done'}", file=sys.stderr)
    return timings, audit_self


# ---------------------------------------------------------------------------------------------- report


def machine_facts(audit_python: str) -> dict[str, object]:
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 0
    sparkenv_version = _run([audit_python, "-c", "import sparkenv; print(sparkenv.__version__)"]).strip()
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpus_usable": usable,
        "python": platform.python_version(),
        "audit_python": audit_python,
        "sparkenv": sparkenv_version,
    }


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.lower().startswith(("model name", "cpu model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB"):
        if value < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.2f} GiB ({n / 1e9:.2f} GB)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] if __doc__ else None,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--runs", type=int, default=7, help="timed rounds (each runs all three commands)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed rounds first (page cache, .pyc)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds allowed to one command")
    parser.add_argument("--workdir", type=Path, help="build here and keep it; reused when its marker matches")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the environment in --workdir")
    parser.add_argument("--keep", action="store_true", help="keep the temporary work folder")
    parser.add_argument("--dists", type=int, default=200, help="synthetic distributions")
    parser.add_argument("--py-files", type=int, default=62_000, help="small Python files across them")
    parser.add_argument("--shared-objects", type=int, default=850, help="ELF shared objects across them")
    parser.add_argument("--seed", type=int, default=20261129)
    parser.add_argument("--python", default=sys.executable, help="interpreter the venv is made from")
    parser.add_argument(
        "--upgrade-pip", action="store_true", help="venv --upgrade-deps: current pip from PyPI (network)"
    )
    parser.add_argument("--audit-python", default=sys.executable, help="interpreter that runs sparkenv")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.warmup < 0:
        parser.error("--runs must be >= 1 and --warmup >= 0")
    if args.dists < FLOOR_DISTS or args.shared_objects < FLOOR_SHARED_OBJECTS:
        print(
            f"note: below the benchmark's floor ({FLOOR_DISTS} distributions, {FLOOR_SHARED_OBJECTS} shared "
            "objects): the audit check will fail",
            file=sys.stderr,
        )

    spec = Spec(
        FORMAT,
        args.dists,
        args.py_files,
        args.shared_objects,
        args.seed,
        str(Path(args.python).absolute()),
        args.upgrade_pip,
    )
    temporary = args.workdir is None
    work = Path(tempfile.mkdtemp(prefix="sparkenv-bench-")) if temporary else args.workdir.absolute()
    try:
        stats = prepare(work, spec, args.rebuild, log=True)
        machine = machine_facts(args.audit_python)
        timings, audit_self = time_commands(
            stats, args.audit_python, args.runs, args.warmup, args.timeout, True
        )
    finally:
        if temporary and not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        elif temporary:
            print(f"kept {work}", file=sys.stderr)

    audit, check, listing = timings["audit"].median, timings["check"].median, timings["list"].median
    vs_check, vs_list = audit / check, audit / listing
    result = {
        "machine": machine,
        "environment": asdict(stats),
        "runs": args.runs,
        "warmup": args.warmup,
        "commands": {
            k: {"argv": t.argv, "seconds": [round(s, 4) for s in t.seconds]} for k, t in timings.items()
        },
        "median_seconds": {k: round(t.median, 4) for k, t in timings.items()},
        "audit_self_reported_median_seconds": round(statistics.median(audit_self), 4) if audit_self else None,
        "ratios": {"audit/pip_check": round(vs_check, 3), "audit/pip_list": round(vs_list, 3)},
        "targets": {"audit/pip_check": TARGET_VS_CHECK, "audit/pip_list": TARGET_VS_LIST},
        "met": {"audit/pip_check": vs_check <= TARGET_VS_CHECK, "audit/pip_list": vs_list <= TARGET_VS_LIST},
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0

    m, s = machine, stats
    pad = " " * 13
    print(f"machine:     {m['platform']} ({m['processor']})")
    print(f"{pad}{m['cpu_count']} CPUs ({m['cpus_usable']} usable)")
    print(
        f"python:      {m['python']} running sparkenv {m['sparkenv']}; "
        f"venv: python {s.venv_python}, pip {s.pip_version}"
    )
    print(f"environment: {s.venv}")
    print(
        f"{pad}{s.distributions} distributions ({s.synthetic_distributions} synthetic), "
        f"{s.elf_shared_objects} ELF shared objects, {s.files:,} files in site-packages"
    )
    print(f"{pad}site-packages: {_size(s.apparent_bytes)} apparent, {_size(s.disk_bytes)} on disk")
    print(
        f"{pad}whole venv: {s.venv_files:,} files, {_size(s.venv_apparent_bytes)} apparent, "
        f"{_size(s.venv_disk_bytes)} on disk"
    )
    print(
        f"runs:        {args.runs} interleaved rounds (order rotated each round) after {args.warmup} warm-up"
    )
    print()
    print(f"{'command':<18}{'median':>10}{'min':>10}{'max':>10}")
    for t in timings.values():
        print(f"{t.name:<18}{t.median:>9.3f}s{min(t.seconds):>9.3f}s{max(t.seconds):>9.3f}s")
    if audit_self:
        print(f"(audit's own timer, context.seconds, median {statistics.median(audit_self):.3f}s)")
    print()
    for label, ratio, target in (
        ("audit / pip check", vs_check, TARGET_VS_CHECK),
        ("audit / pip list ", vs_list, TARGET_VS_LIST),
    ):
        print(f"{label} = {ratio:.2f}   target <= {target:.1f}   {'met' if ratio <= target else 'NOT MET'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
