"""`sparkenv build` reads its base before any step, and takes sparkenv's runtime for the base's own python3,
without pip in sparkenv's environment.

Real parts: sparkenv installed with `uv tool install` from a wheel of this checkout into a temporary tool
folder (no pip in that environment), a real Docker engine, the NGC-like stand-in (Python 3.11), a Debian
trixie base (Python 3.13: neither the stand-in's nor CI's 3.11) and a stand-in whose torch is another
version, a real `sparkenv lock` against a local index on 127.0.0.1, real builds and `docker run`s. The
runtime wheels (typer, pydantic-core …) come from uv's configured index (hence `network`).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import build_helpers as bh
import pytest
from artifacts import Index, serve

pytestmark = [pytest.mark.docker, pytest.mark.network]
REPO = Path(__file__).resolve().parents[2]
OTHER_TORCH_TAG = "sparkenv-test/standin-torch291:1"


@pytest.fixture(scope="module")
def engine():  # type: ignore[no-untyped-def]
    client = bh.engine_or_skip()
    bh.ensure_standin(client)
    bh.ensure_other_python(client)
    return client


@pytest.fixture(scope="module")
def tool(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """sparkenv[lock,build] installed as `uv tool install` installs it; returns the folder of its command."""
    import uv

    root = tmp_path_factory.mktemp("tool")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(root / "dist"), str(REPO)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = (root / "dist").glob("sparkenv-*.whl")
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env |= {"UV_TOOL_DIR": str(root / "tools"), "UV_TOOL_BIN_DIR": str(root / "bin")}
    installed = subprocess.run(
        [
            uv.find_uv_bin(),
            "tool",
            "install",
            "--python",
            sys.executable,
            f"sparkenv[lock,build] @ {wheel.as_uri()}",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert installed.returncode == 0, installed.stderr[-2000:]
    python = root / "tools" / "sparkenv" / "bin" / "python"
    no_pip = subprocess.run(
        [str(python), "-m", "pip", "--version"], capture_output=True, text=True, timeout=60
    )
    assert no_pip.returncode != 0 and "No module named pip" in no_pip.stderr  # as users of uv tool have it
    return root / "bin"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    ix = Index(tmp_path_factory.mktemp("index"))
    ix.wheel("tinypkg", "1.0", files={"tinypkg/__init__.py": b"GREETING = 'hello from tinypkg'\n"})
    server = serve(ix)
    yield ix
    server.shutdown()


def _project(folder: Path) -> Path:
    """A git repository with a requirements file and the stand-in's profile (Python 3.11, torch provided)."""
    folder.mkdir()
    subprocess.run(["git", "init", "-q", str(folder)], check=True, timeout=60)
    (folder / "requirements.txt").write_text("tinypkg\n")
    provides = "\n".join(f'{k} = "{v}"' for k, v in bh.PROVIDES.items())
    (folder / "standin.toml").write_text(bh.STANDIN_PROFILE.format(image=bh.STANDIN_TAG, provides=provides))
    return folder


def _sparkenv(
    tool: Path, cwd: Path, *args: str, cache: Path, timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    """The uv-tool-installed sparkenv, from the project, as a user runs it (`sparkenv` on PATH)."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env |= {
        "PATH": f"{tool}:{env['PATH']}",
        "SPARKENV_CACHE_DIR": str(cache),
        "PIP_CERT": "",
        "SSL_CERT_FILE": "",
    }
    return subprocess.run(
        ["sparkenv", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def _lock(tool: Path, project: Path, profile: str, index: Index, cache: Path) -> None:
    """`sparkenv lock requirements.txt --profile PROFILE` from the project, against the loopback index."""
    locked = _sparkenv(
        tool, project, "lock", "requirements.txt", "--profile", profile, "--index-url", index.url, cache=cache
    )
    assert locked.returncode == 0, locked.stdout + locked.stderr


def test_a_base_with_another_python_stops_the_build_before_any_step_and_its_printed_fix_builds_there(
    engine, tool, index, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    project = _project(tmp_path / "project")
    cache = tmp_path / "cache"  # sparkenv's cache empty: the runtime wheels are resolved and fetched here
    _lock(tool, project, "standin.toml", index, cache)

    # the lock is for the stand-in (Python 3.11, torch provided); the base has Python 3.13 and no torch
    refused = _sparkenv(
        tool,
        project,
        *("build", "--lock", "lockfiles/pylock.standin.toml", "--base", bh.OTHER_PYTHON_TAG),
        *("--tag", "sparkenv-test/fit:no"),
        cache=cache,
    )
    assert refused.returncode == 2, refused.stdout + refused.stderr
    (line,) = refused.stderr.strip().splitlines()  # one line, no traceback, no step run
    assert "step 1/" not in refused.stdout + refused.stderr
    assert line.startswith(
        f"sparkenv: error: the base {bh.OTHER_PYTHON_TAG} is not what lockfiles/pylock.standin.toml was "
        "locked for (profile standin): Python 3.13."
    ), line
    assert "(the profile: 3.11.2)" in line
    assert f"torch absent (the profile: {bh.PROVIDES['torch']})" in line
    assert "glibc" not in line  # trixie's 2.41 runs every wheel made for the profile's 2.36
    fix = line.split("make a profile of this base and lock for it: ", 1)[1]
    steps = fix.split(" && ")
    assert [shlex.split(s)[:3] for s in steps] == [
        ["sparkenv", "profiles", "new"],
        ["sparkenv", "lock", "requirements.txt"],
        ["sparkenv", "build", "--lock"],
    ], fix

    # the printed fix, run as printed from where the user stands; the build also gets --network host (the
    # test's index is on this machine's loopback) and a tag
    for step in steps[:2]:
        ran = _sparkenv(tool, project, *shlex.split(step)[1:], cache=cache)
        assert ran.returncode == 0, (step, ran.stdout + ran.stderr)
    tag = "sparkenv-test/fit:py313"
    built = _sparkenv(
        tool, project, *shlex.split(steps[2])[1:], "--network", "host", "--tag", tag, "-q", cache=cache
    )
    assert built.returncode == 0, built.stdout + built.stderr[-3000:]
    assert f"tagged {tag}" in built.stdout
    # sparkenv's runtime went in for the base's Python 3.13 (pydantic-core is a binary wheel), not 3.11's
    wheels = sorted(p.name for p in (cache / "runtime").glob("*/*.whl"))
    assert any(w.startswith("pydantic_core-") and "-cp313-" in w for w in wheels), wheels
    # sparkenv's typer CLI runs in the image (pydantic-core imported) and the gate starts the workload
    explained = subprocess.run(
        ["docker", "run", "--rm", "--entrypoint", "/usr/local/bin/sparkenv", tag, "explain", "G4"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert explained.returncode == 0 and "G4" in explained.stdout, explained.stderr[-2000:]
    code = "import sys, tinypkg; print(tinypkg.GREETING, sys.version_info[:2])"
    run = subprocess.run(
        ["docker", "run", "--rm", tag, "python3", "-c", code], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0 and "hello from tinypkg (3, 13)" in run.stdout, run.stdout + run.stderr
    subprocess.run(["docker", "rmi", "-f", tag], capture_output=True, timeout=120)


def test_a_base_whose_torch_is_not_the_profiles_stops_the_build_before_any_step(
    engine, index, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """The provided packages: a stand-in whose torch is 2.9.1, not the profile's NGC build."""
    from docker.errors import ImageNotFound

    try:
        engine.images.get(OTHER_TORCH_TAG)
    except ImageNotFound:
        ctx = {f"site/{p}": d for p, d in bh.fake_dist("torch", "2.9.1").items()}
        ctx["Dockerfile"] = (
            f"FROM {bh.STANDIN_TAG}\nRUN rm -rf {bh.SITE}/torch {bh.SITE}/torch-*.dist-info\n"
            f"COPY site/ {bh.SITE}/\n"
        ).encode()
        engine.images.build(
            fileobj=bh.context_tar(ctx), custom_context=True, tag=OTHER_TORCH_TAG, rm=True, forcerm=True
        )
    wheel = index.root / "files" / "tinypkg-1.0-py3-none-any.whl"
    lock = bh.write_lock(tmp_path, index.url, {"1-packages": [wheel]}, bh.STANDIN_TAG)
    argv = [sys.executable, "-m", "sparkenv", "build", "--lock", str(lock), "--profile"]
    argv += [str(tmp_path / "standin.toml"), "--base", OTHER_TORCH_TAG, "--tag", "sparkenv-test/fit:torch"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert f"torch 2.9.1 (the profile: {bh.PROVIDES['torch']})" in line, line
    assert "Python" not in line.split("(profile standin): ", 1)[1].split(";", 1)[0]  # the same 3.11
    assert f"sparkenv profiles new standin-torch291-1 --from-image {OTHER_TORCH_TAG}" in line, line
    assert "step 1/" not in proc.stdout + proc.stderr  # nothing was built


def test_dry_run_under_uv_tool_takes_the_runtime_for_the_profiles_python(tool, index, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """`build --dry-run` needs no Docker and no pip: the runtime wheels for the profile's Python (3.13 here,
    not this machine's), resolved by uv."""
    assert sys.version_info[:2] != (3, 13)
    project = _project(tmp_path / "project")
    profile = (project / "standin.toml").read_text()
    profile = profile.replace('python = "3.11.2"', 'python = "3.13.5"').replace('"2.36"', '"2.41"')
    (project / "py313.toml").write_text(
        profile.replace('name = "standin"', 'name = "py313"').replace("manylinux_2_36", "manylinux_2_41")
    )
    cache = tmp_path / "cache"
    _lock(tool, project, "py313.toml", index, cache)
    dry = _sparkenv(
        tool, project, "build", "--dry-run", "--lock", "lockfiles/pylock.py313.toml", cache=cache, timeout=600
    )
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert "No module named pip" not in dry.stderr
    context = [ln for ln in dry.stdout.splitlines() if ln.startswith("#   sparkenv/runtime/")]
    assert any("pydantic_core-" in ln and "-cp313-" in ln for ln in context), dry.stdout[-3000:]
    assert not any("-cp311-" in ln for ln in context), context


HANGING_TAG = "sparkenv-test/standin-python-hangs:2"


def test_a_signal_while_the_base_is_read_removes_the_probe_container(engine, index, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A base whose python3 never answers: SIGTERM while build reads it ends sparkenv with 143 and the
    closing line, and the probe's container is removed (a real process, a real signal, a real engine)."""

    import artifacts
    from docker.errors import ImageNotFound

    try:
        engine.images.get(HANGING_TAG)
    except ImageNotFound:
        # first on PATH (an executable: context_tar makes .sh files so): the probe's python3 hangs
        ctx = {"python3.sh": b"#!/bin/sh\nexec sleep 600\n"}
        ctx["Dockerfile"] = f"FROM {bh.STANDIN_TAG}\nCOPY python3.sh /usr/local/bin/python3\n".encode()
        engine.images.build(
            fileobj=bh.context_tar(ctx), custom_context=True, tag=HANGING_TAG, rm=True, forcerm=True
        )
    wheel = index.root / "files" / "tinypkg-1.0-py3-none-any.whl"
    lock = bh.write_lock(tmp_path, index.url, {"1-packages": [wheel]}, bh.STANDIN_TAG)
    argv = [sys.executable, "-m", "sparkenv", "build", "--lock", str(lock), "--profile"]
    argv += [str(tmp_path / "standin.toml"), "--base", HANGING_TAG, "--tag", "sparkenv-test/fit:hang"]
    proc = subprocess.Popen(
        argv,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=artifacts.default_dispositions,
    )
    err = bh.sigterm_when(proc, lambda: bool(bh.probe_containers(HANGING_TAG)), 120)  # once the probe runs
    assert proc.returncode == 143, err[-2000:]
    last = err.strip().splitlines()[-1]
    assert last.startswith("sparkenv: terminated (SIGTERM)") and "removed the probe container" in last, err
    assert "Traceback" not in err and "step 1/" not in err
    assert bh.probe_containers(HANGING_TAG) == []
