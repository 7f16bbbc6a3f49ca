"""Each stage's typed facts, built by that stage's own builders from real inputs: a requirements file
read by lock/inputs.py (Stage.DECLARED), locked packages as lock/judging.py hands them to the policy
(Stage.RESOLVED), a real installed environment with compiled ELF files scanned by audit/scan.py
(Stage.INSTALLED), and facts snapshots recorded on real machines viewed through gate/view.py
(Stage.LIVE)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gate_helpers
from conftest import ElfFactory, Env, make_env
from packaging.requirements import Requirement

from sparkenv.audit import scan
from sparkenv.cuda import coverage
from sparkenv.environment import profiles, target
from sparkenv.facts import graph
from sparkenv.facts.declared import DeclaredFacts
from sparkenv.facts.installed import AuditFacts
from sparkenv.facts.live import GateFacts
from sparkenv.facts.resolved import Locked, ResolvedFacts
from sparkenv.facts.timeseries import GpuProcess, GpuReading, Sample, Series
from sparkenv.lock import inputs
from sparkenv.lock import plan as resolve_run
from sparkenv.lock import read as lockread


@dataclass
class Ctx:
    """What a row may build its facts from: a fresh folder, the ELF compiler, an empty filesystem root."""

    tmp_path: Path
    elves: ElfFactory
    _kernels: Callable[[], Any]

    @property
    def kernels(self) -> Any:
        """tests/kernel_helpers.Kernels: real fatbins compiled by nvcc, once per session."""
        return self._kernels()

    def __post_init__(self) -> None:
        self.root = self.tmp_path / "root"
        self.root.mkdir(exist_ok=True)
        self._envs: dict[str, Env] = {}

    def env(self, arch: str = "x86_64") -> Env:
        if arch not in self._envs:
            self._envs[arch] = make_env(self.tmp_path, self.elves, arch)
        return self._envs[arch]

    def file(self, rel: str, text: str) -> Path:
        path = self.tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path


# --- Stage.DECLARED: sparkenv check ------------------------------------------------------------------


def declared(
    ctx: Ctx, text: str, profile: str = "spark-bare", staged: bool = False, platform: str | None = None
) -> DeclaredFacts:
    """`text` as a requirements.txt, read and shaped the way `sparkenv check` does."""
    path = ctx.file("requirements.txt", text)
    inp = inputs.read([str(path)])
    prof = inputs.profile_for(profile, platform, inp)
    urls = resolve_run.index_urls(inp, resolve_run.index_options(inp, None, []))
    return DeclaredFacts(tuple(inp.requirements), prof, tuple(urls), staged)


# --- Stage.RESOLVED: sparkenv lock -------------------------------------------------------------------


def locked(
    key: str, version: str, requires: tuple[str, ...] = (), sdist_only: bool = False, stage: str = "main"
) -> Locked:
    """One resolved package as lock/from_uv.py makes it from uv's pylock entry."""
    file = f"{key.replace('-', '_')}-{version}"
    return Locked(
        key,
        version,
        stage,
        [] if sdist_only else [f"{file}-py3-none-any.whl"],
        f"{file}.tar.gz" if sdist_only else None,
        [Requirement(r) for r in requires],
    )


def resolved(
    *pkgs: Locked, profile: str = "spark-bare", roots: tuple[str, ...] | None = None, **more: Any
) -> ResolvedFacts:
    """The resolved set as `sparkenv lock` hands it to the policy, edges read from each Requires-Dist."""
    prof = profiles.load(profile)
    by_key = {p.key: p for p in pkgs}
    edges = graph.edges({p.key: list(p.requires or []) for p in pkgs}, prof.marker_env())
    return ResolvedFacts(
        by_key,
        tuple(roots if roots is not None else by_key),
        prof,
        more.pop("no_deps_stage", None),
        None,
        tuple(edges),
        **more,
    )


# --- Stage.INSTALLED: sparkenv audit -----------------------------------------------------------------


def installed(
    ctx: Ctx,
    arch: str = "x86_64",
    lock: str | None = None,
    gpu: coverage.Capability | None = None,
    environ: dict[str, str] | None = None,
) -> AuditFacts:
    """The environment `ctx.env(arch)` as `sparkenv audit PREFIX --root ROOT` gathers it."""
    resolved_target = target.resolve(str(ctx.env(arch).prefix), None)
    pins = lockread.given(lock) if lock else None
    return scan.gather(resolved_target, pins, ctx.root, gpu, environ or {})


# --- Stage.LIVE: sparkenv gate -----------------------------------------------------------------------


def live(base: str = "h200-static", need_gb: float = 0.0, **changes: Any) -> GateFacts:
    """A snapshot recorded on a real machine (tests/fixtures/facts), or the GB10's from public reports
    ("gb10"), with sections replaced (`section=value`) or extended (`section={"+": {...}}`)."""
    raw = gate_helpers.gb10_from_reports() if base == "gb10" else gate_helpers.live(base)
    return GateFacts(gate_helpers.with_changes(raw, **changes), need_gb)


def edit(facts: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy with one nested value set: edit(raw, "torch_static.cuda", "12.8")."""
    out = copy.deepcopy(facts)
    node = out
    *parents, last = path.split(".")
    for p in parents:
        node = node.setdefault(p, {})
    node[last] = value
    return out


def live_raw(base: str = "h200-static", need_gb: float = 0.0, **edits: Any) -> GateFacts:
    """A recorded snapshot with nested values set: live_raw(torch_static__cuda="12.8")."""
    raw = gate_helpers.gb10_from_reports() if base == "gb10" else gate_helpers.live(base)
    for key, value in edits.items():
        raw = edit(raw, key.replace("__", "."), value)
    return GateFacts(raw, need_gb)


# --- Stage.WATCH: sparkenv gate --watch, sparkenv watch ------------------------------------------------

# An H200 at rest as the watcher read it (tests/fixtures/watch/h200-matmul-cotenant.jsonl, first line):
# what each synthetic series starts from.
H200_REST = {
    "temperature_c": 36,
    "power_w": 79.1,
    "power_limit_w": 700.0,
    "sm_clock_mhz": 345,
    "sm_clock_max_mhz": 1980,
    "utilization": 0,
    "event_reasons": 1,
    "power_violation_s": 0.0,
    "thermal_violation_s": 0.0,
    "sw_thermal_s": 0.0,
    "hw_thermal_s": 0.0,
    "hw_power_brake_s": 0.0,
    "shutdown_c": 95.0,
}
MEM_H200 = {"mem_total_kb": 131961788, "mem_available_kb": 131393008, "mem_free_kb": 129532924,
            "page_cache_kb": 2067436, "psi_some_avg10": 0.0, "psi_full_avg10": 0.0}  # fmt: skip


def series(
    n: int = 30,
    every: float = 2.0,
    gpu: Callable[[int], dict[str, Any]] | None = None,
    mem: Callable[[int], dict[str, Any]] | None = None,
    apps: Callable[[int], list[dict[str, Any]]] | None = None,
    gb10: bool = False,
    pids_local: bool = True,
    rest: dict[str, Any] | None = None,
) -> Series:
    """n readings `every` s apart, each GPU and memory reading the rest values changed by gpu(i) / mem(i),
    the processes NVML lists given by apps(i); gpu=None with rest={} reads no GPU at all."""
    base = H200_REST if rest is None else rest
    samples = []
    for i in range(n):
        g = (GpuReading(index=0, **{**base, **(gpu(i) if gpu else {})}),) if base or gpu else ()
        samples.append(
            Sample(
                t=i * every,
                wall=1_796_175_000 + i * every,
                gpus=g,
                apps=tuple(GpuProcess(**a) for a in (apps(i) if apps else [])),
                **{**MEM_H200, **(mem(i) if mem else {})},
            )
        )
    return Series(tuple(samples), gb10=gb10, pids_local=pids_local)


def recorded(name: str) -> Series:
    """A record the watcher wrote on a real machine (tests/fixtures/watch/), read back as the report does."""
    from sparkenv.watch import record, report

    path = Path(__file__).resolve().parents[1] / "fixtures" / "watch" / name
    return report.series(record.read(str(path)))
