"""`sparkenv build` against a plain `docker build` of the same generated Dockerfile and context, and an
unchanged rebuild (all cached, verification included).

    python benchmarks/build_speed.py [--runs 3]

Needs a running Docker engine and the tests' stand-in base (built on first use, ~60 s, cached by tag).
The lock holds two small real wheels served from a local index on 127.0.0.1 (so the builds run with
--network host). Both cold builds use --no-cache; plain docker build uses the classic builder
(DOCKER_BUILDKIT=0), as the Engine API does. sparkenv's time includes its verification container.
Targets (issue 5): cold sparkenv build <= 1.1 x plain docker build; unchanged rebuild <= 10 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

import artifacts  # noqa: E402
import build_helpers as bh  # noqa: E402


def timed(cmd: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> float:
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env, cwd=cwd)
    took = time.perf_counter() - started
    if proc.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd[:6])}…\n{proc.stderr[-2000:]}{proc.stdout[-1000:]}")
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    import docker

    client = docker.from_env(timeout=60)
    bh.ensure_standin(client)
    from sparkenv.image import context, runtime

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        wheels = [
            artifacts.write_wheel(work, "tinypkg", "1.0"),
            artifacts.write_wheel(work, "unsloth", "2026.7.2"),
        ]
        with artifacts.serve_index(wheels) as url:
            lock_path = bh.write_lock(
                work, url, {"1-packages": wheels[:1], "2-unsloth": wheels[1:]}, bh.STANDIN_TAG
            )
            lock = context.read_lock(lock_path)
            prof = context.profile_for(lock, str(work / "standin.toml"))
            target = runtime.Target(prof.python_minor, "x86_64", prof.glibc)
            rt = [runtime.sparkenv_wheel(), *runtime.dependency_wheels(target)]
            base = context.Base(bh.STANDIN_TAG, client.images.get(bh.STANDIN_TAG).id, bh.STANDIN_TAG)
            plan = context.Plan(prof, lock, base, "bench", None, False, rt)
            ctx = work / "context"
            for name, (data, mode) in plan.files().items():
                p = ctx / name
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_bytes(data)
                p.chmod(mode)
            env = {**os.environ, "PIP_CERT": "", "SSL_CERT_FILE": ""}
            sparkenv = [
                sys.executable,
                "-m",
                "sparkenv",
                "build",
                "--lock",
                str(lock_path),
                "--profile",
                str(work / "standin.toml"),
                "--base",
                bh.STANDIN_TAG,
                "--platform",
                "linux/amd64",
                "--network",
                "host",
                "--tag",
                "sparkenv-bench/app:latest",
                "-q",
            ]
            plain = [
                "docker",
                "build",
                "-q",
                "--network",
                "host",
                "--platform",
                "linux/amd64",
                "-t",
                "sparkenv-bench/plain:latest",
                str(ctx),
            ]
            denv = {**os.environ, "DOCKER_BUILDKIT": "0"}
            timed(sparkenv, env, REPO)  # warm sparkenv's own wheel caches (not the engine's layer cache)
            cold_s, cold_p, warm_s = [], [], []
            for _ in range(args.runs):
                cold_p.append(timed([*plain[:2], "--no-cache", *plain[2:]], denv))
                cold_s.append(timed([*sparkenv, "--no-cache"], env, REPO))
                warm_s.append(timed(sparkenv, env, REPO))
    s, p, w = (statistics.median(x) for x in (cold_s, cold_p, warm_s))
    print(f"runs: {args.runs} each (median); lock: 2 wheels in 2 stages; base {bh.STANDIN_TAG}")
    print(f"plain docker build --no-cache (classic builder): {p:6.2f} s   {[round(x, 2) for x in cold_p]}")
    print(
        f"sparkenv build --no-cache (incl. verification):  {s:6.2f} s   {[round(x, 2) for x in cold_s]}  "
        f"= {s / p:.2f} x plain (target <= 1.1)"
    )
    print(
        f"sparkenv build, unchanged rebuild:               {w:6.2f} s   {[round(x, 2) for x in warm_s]}  "
        f"(target <= 10 s)"
    )


if __name__ == "__main__":
    main()
