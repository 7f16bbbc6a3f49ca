"""A new user's journey, every stage in a row, as the README shows it: sparkenv's wheel built from this
checkout and installed with `uv tool install` (its own tool folder, not this checkout, not a venv of the
tests); a fresh git repository; a custom profile generated from the stand-in base image (`profiles new
--from-image`); then check → lock → `lock --check` from a subfolder → the pre-commit hooks through real
`pre-commit try-repo` → the GitHub Action's steps run by bash → build → `docker run` of the image with the
gate in front of a workload → audit inside the image. A private index on 127.0.0.1 demands HTTP basic
auth; its user-info (the planted secret) is given to sparkenv in index URLs (UV_EXTRA_INDEX_URL,
`lock --index-url`) and must be found in no file written, no output of any format and no image layer.
Where two stages judge the same thing (the same input, the same lock, the same image), each finding has
the same status at both."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import artifacts
import build_helpers as bh
import pytest

pytestmark = [pytest.mark.docker, pytest.mark.network]
REPO = Path(__file__).resolve().parents[1]
USER, SECRET = "alice", "j0urneyPlanted55"
TAG = "sparkenv-test/journey:1"
FINDING = re.compile(r"^(G(?:10|[1-9])) (PASS|FAIL|WARN|SKIP|INFO|ERROR): (.+)$", re.M)


def _uv() -> str:
    import uv

    return str(uv.find_uv_bin())


def _machine_index() -> dict[str, str]:
    """This machine's package index settings (a mirror, a TLS proxy's CA): what installers need."""
    return {
        k: v for k, v in os.environ.items() if k.startswith(("UV_INDEX", "UV_DEFAULT", "UV_EXTRA", "PIP_"))
    }


def _clean_env(installer: bool = False, **extra: str) -> dict[str, str]:
    """The user's shell: no venv of the tests active. An installer keeps this machine's index settings;
    sparkenv's own runs get none (the private index and its credential are all they are given)."""
    drop = ("VIRTUAL_ENV", "PYTHONPATH", "NETRC", "NO_COLOR", "FORCE_COLOR")
    indexes = ("UV_INDEX", "UV_DEFAULT", "UV_EXTRA", "PIP_INDEX", "PIP_EXTRA")
    env = {k: v for k, v in os.environ.items() if k not in drop and (installer or not k.startswith(indexes))}
    here = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(d for d in env.get("PATH", "").split(os.pathsep) if d and d != here)
    env.update(extra)
    return env


def _run(
    cmd: list[str], cwd: Path, env: dict[str, str], timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _json_findings(text: str) -> dict[tuple[str, str], str]:
    return {(f["id"], f["subject"]): f["status"] for f in json.loads(text)["findings"]}


def _lines(text: str) -> set[tuple[str, str, str]]:
    """The finding lines a text report prints: (id, status, rest of the line)."""
    return {(m.group(1), m.group(2), m.group(3)) for m in FINDING.finditer(text)}


def _json_lines(text: str) -> set[tuple[str, str, str]]:
    """The same lines, as the JSON report of the same run carries them."""
    found = set()
    for f in json.loads(text)["findings"]:
        fix = f"; {f['fix']}" if f["fix"] and f["status"] in ("FAIL", "WARN", "ERROR") else ""
        found.add((f["id"], f["status"], f["summary"] + fix))
    return found


def _agree(a: dict[tuple[str, str], str], b: dict[tuple[str, str], str]) -> list[str]:
    """Findings both stages judged, with another status at each."""
    return [f"{k}: {a[k]} vs {b[k]}" for k in sorted(a.keys() & b.keys()) if a[k] != b[k]]


def _leaks(roots: list[Path], printed: list[str]) -> list[str]:
    found = [f"printed: {p[:300]!r}" for p in printed if SECRET in p]
    for root in roots:
        for path in [root, *root.rglob("*")]:
            if path.is_file() and not path.is_symlink() and SECRET.encode() in path.read_bytes():
                found.append(str(path))
    return found


def test_a_new_users_journey_through_every_stage(tmp_path: Path) -> None:
    client = bh.engine_or_skip()
    bh.ensure_standin(client)
    printed: list[str] = []

    def out(proc: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
        printed.extend([proc.stdout, proc.stderr])
        return proc

    # --- sparkenv as a user installs it: the built wheel, through `uv tool install` ---------------------
    dist, tools = tmp_path / "dist", tmp_path / "tools"
    built = _run(
        [_uv(), "build", "--wheel", "-q", "--out-dir", str(dist), str(REPO)], tmp_path, _clean_env(True)
    )
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = dist.glob("sparkenv-*.whl")
    tool_env = _clean_env(True, UV_TOOL_DIR=str(tools / "lib"), UV_TOOL_BIN_DIR=str(tools / "bin"))
    install = [
        _uv(),
        "tool",
        "install",
        "-q",
        "--python",
        sys.executable,
        f"sparkenv[all] @ {wheel.as_uri()}",
    ]
    inst = _run(install, tmp_path, tool_env)
    assert inst.returncode == 0, inst.stderr[-2000:]
    version = _run([str(tools / "bin" / "sparkenv"), "--version"], tmp_path, _clean_env())
    assert str(tools / "lib" / "sparkenv") in version.stdout, version.stdout  # the tool, not this checkout

    # --- a private index on loopback that demands basic auth -------------------------------------------
    ix = artifacts.Index(tmp_path / "index")
    ix.wheel("tinydep", "1.2.0")
    ix.wheel("tinypkg", "1.0.0", requires=["tinydep>=1"])
    server = artifacts.serve(ix, auth=f"{USER}:{SECRET}")
    secret_url = ix.url.replace("http://", f"http://{USER}:{SECRET}@")
    cache = tmp_path / "sparkenv-cache"
    # the user's shell: this machine's index settings (sparkenv's own runtime wheels come from there) and
    # the private index as an extra index whose URL holds the credential, as uv reads it
    env = _clean_env(
        True,
        PATH=f"{tools / 'bin'}{os.pathsep}{_clean_env()['PATH']}",
        UV_EXTRA_INDEX_URL=secret_url,
        UV_CACHE_DIR=str(tmp_path / "uv-cache"),
        SPARKENV_CACHE_DIR=str(cache),
    )

    def sparkenv(*args: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return out(_run(["sparkenv", *args], cwd, env, timeout))

    # --- a fresh git repository, a custom profile from the base image ----------------------------------
    repo, reports = tmp_path / "repo", tmp_path / "reports"
    (repo / "sub").mkdir(parents=True)
    reports.mkdir()
    git = ["git", "-c", "user.email=j@example.invalid", "-c", "user.name=j"]
    assert _run([*git, "init", "-q"], repo, env).returncode == 0
    new = sparkenv("profiles", "new", "standin", "--from-image", bh.STANDIN_TAG, cwd=repo)
    assert new.returncode == 0 and (repo / "standin.toml").is_file(), new.stdout + new.stderr
    (repo / "pyproject.toml").write_text(
        '[project]\nname = "journey"\nversion = "0"\ndependencies = ["tinypkg", "torch>=2.9"]\n\n'
        '[tool.sparkenv]\nprofile = "standin.toml"\n'
    )
    (repo / "sub" / "train.py").write_text("import tinypkg\nprint('workload ran', tinypkg.__version__)\n")
    _run([*git, "add", "-A"], repo, env)
    _run([*git, "commit", "-q", "-m", "start"], repo, env)

    def reported(stage: str, *args: str, cwd: Path = repo) -> tuple[subprocess.CompletedProcess[str], dict]:
        """A stage in JSON with every report file; what it printed and its findings."""
        files = ["--report", str(reports / f"{stage}.json"), "--junit", str(reports / f"{stage}.xml")]
        files += ["--sarif", str(reports / f"{stage}.sarif")]
        proc = sparkenv(*args, "--format", "json", *files, cwd=cwd)
        assert proc.returncode in (0, 1), f"{stage}: {proc.stdout[-2000:]}{proc.stderr[-2000:]}"
        text = sparkenv(*args, cwd=cwd)  # and as text
        assert text.returncode == proc.returncode
        assert _lines(text.stdout) == _json_lines(proc.stdout), stage
        return proc, _json_findings(proc.stdout)

    # --- check, lock, lock --check from a subfolder -------------------------------------------------------
    check, check_f = reported("check", "check", "pyproject.toml")
    assert check.returncode == 0, check.stdout
    lock, lock_f = reported("lock", "lock", "pyproject.toml", "--index-url", secret_url)
    assert lock.returncode == 0, lock.stdout + lock.stderr
    pylock = repo / "lockfiles" / "pylock.standin.toml"
    assert pylock.is_file() and 'profile-file = "standin.toml"' in pylock.read_text()
    assert 'name = "tinydep"' in pylock.read_text()  # resolved through the credential
    assert _agree(check_f, lock_f) == []
    # from a subfolder: the project root's lock, named as seen from there
    below, below_f = reported("lock-check-sub", "lock", "--check", cwd=repo / "sub")
    assert below.returncode == 0 and below_f == {("G9", "../lockfiles/pylock.standin.toml"): "PASS"}, below_f
    current, current_f = reported("lock-check", "lock", "--check")  # from the root, as hooks and CI run it
    assert current_f == {("G9", "lockfiles/pylock.standin.toml"): "PASS"}
    _run([*git, "add", "-A"], repo, env)
    _run([*git, "commit", "-q", "-m", "lock"], repo, env)

    # --- the hooks through pre-commit try-repo -------------------------------------------------------------
    # pre-commit installs the hooks' environment with pip: this machine's index settings for that
    hook_env = {**env, **_machine_index(), "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")}
    pre_commit = shutil.which("pre-commit") or str(Path(sys.executable).with_name("pre-commit"))
    hooks = {}
    for hook in ("sparkenv-check", "sparkenv-lock-check"):
        proc = out(
            _run(
                [pre_commit, "try-repo", str(REPO), hook, "--all-files", "--verbose"],
                repo,
                hook_env,
                timeout=900,
            )
        )
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
        hooks[hook] = _lines(proc.stdout)
    assert hooks["sparkenv-check"] == _json_lines(check.stdout)
    assert hooks["sparkenv-lock-check"] == _json_lines(current.stdout)

    # --- the Action's steps, run by bash as the runner runs them -------------------------------------------
    from test_ci_fit import _action_steps, _run_step

    action, steps = _action_steps()
    runner = tmp_path / "runner"
    assert (
        _run(
            [_uv(), "venv", "-q", "--seed", "--python", sys.executable, str(runner)],
            tmp_path,
            _clean_env(True),
        ).returncode
        == 0
    )
    gh = {name: tmp_path / f"github-{name}" for name in ("env", "output", "summary")}
    for f in gh.values():
        f.touch()
    step_env = {
        **env,
        "PATH": f"{runner / 'bin'}{os.pathsep}{env['PATH']}",
        "GITHUB_ENV": str(gh["env"]),
        "GITHUB_OUTPUT": str(gh["output"]),
        "GITHUB_STEP_SUMMARY": str(gh["summary"]),
    }
    # pip of the runner installs sparkenv from the action's checkout, from pip's own index
    install_env = {**{k: v for k, v in step_env.items() if k != "UV_EXTRA_INDEX_URL"}, **_machine_index()}
    inputs = {k: str(v.get("default", "")) for k, v in action["inputs"].items()}
    inputs["requirements"] = "pyproject.toml"
    step_out = []
    for i, step in enumerate(steps):
        proc = out(_run_step(step, inputs, repo, install_env if i == 0 else step_env))
        assert proc.returncode == 0, f"{step.get('name')}: {proc.stdout[-2000:]}{proc.stderr[-2000:]}"
        step_out.append(proc.stdout)
    assert _lines(step_out[1]) == _json_lines(check.stdout)
    assert _lines(step_out[2]) == _json_lines(current.stdout)
    assert gh["output"].read_text().splitlines() == ["verdict=ready", "sarif=sparkenv.sarif"]
    (repo / "sparkenv.sarif").rename(reports / "action.sarif")

    # --- build, docker run with the gate in front, audit ---------------------------------------------
    try:
        build_args = ["build", "--platform", "linux/amd64", "--network", "host", "--tag", TAG, "-q"]
        build_args += ["--json", "--report", str(reports / "build.json")]
        # no --lock, no --profile: the project's lock of the project's profile ([tool.sparkenv]), from here
        build = sparkenv(*build_args, cwd=repo / "sub", timeout=900)
        assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
        build_f = _json_findings(build.stdout)
        assert _agree(lock_f, build_f) == []
        run = out(
            _run(
                ["docker", "run", "--rm", "-v", f"{repo / 'sub'}:/work:ro", TAG, "python3", "/work/train.py"],
                repo,
                env,
            )
        )
        assert run.returncode == 0 and "workload ran 1.0.0" in run.stdout, run.stdout + run.stderr
        assert "verdict:" in run.stderr  # the gate judged before the workload started
        audit = out(
            _run(
                [
                    "docker",
                    "run",
                    "--rm",
                    "--entrypoint",
                    "sparkenv",
                    TAG,
                    "audit",
                    "--json",
                    "--lock",
                    "/opt/sparkenv/pylock.toml",
                ],
                repo,
                env,
            )
        )
        assert audit.returncode == 0, audit.stdout[-2000:] + audit.stderr[-2000:]
        audit_f = _json_findings(audit.stdout)
        assert audit_f == build_f  # the image judged from inside, as the build judged it
        assert _agree(lock_f, audit_f) == []
        # torch, which the base provides, judged alike by every stage that sees it
        assert check_f[("G9", "torch")] == lock_f[("G9", "torch")] == audit_f[("G9", "torch")] == "PASS"
        assert re.search(r"^G9 PASS: torch \S+ is the NGC image", run.stderr, re.M), run.stderr

        # --- the planted secret: used, and written nowhere -----------------------------------------
        assert any(path.startswith("/simple/tinypkg") for path, _ in server.requests)  # type: ignore[attr-defined]
        assert _leaks([repo, reports, cache, *gh.values()], printed) == []
        image = client.images.get(TAG)
        assert SECRET not in repr(image.attrs) and SECRET not in repr(image.history())
        assert bh.layers_holding(client, TAG, SECRET.encode()) == []
    finally:
        server.shutdown()
        subprocess.run(["docker", "rmi", "-f", TAG], capture_output=True, timeout=120)
