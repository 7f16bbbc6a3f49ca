"""sparkenv in CI: GitHub annotations, SARIF, waivers, colour on a terminal only, the composite action run
as a script, and the pre-commit hooks through `pre-commit try-repo` against this checkout."""

from __future__ import annotations

import json
import os
import pty
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
CU12 = "transformers==4.57.1\nnvidia-cuda-runtime-cu12\n"


def sparkenv(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    return subprocess.run(
        [sys.executable, "-m", "sparkenv", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env={**base, **(env or {})},
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "requirements.txt").write_text(CU12)
    return tmp_path


def _runner_venv(tmp_path: Path) -> Path:
    """A fresh venv with pip, as a runner's setup-python gives (the Action's steps install sparkenv in it)."""
    import uv

    venv = tmp_path / "runner"
    subprocess.run(
        [str(uv.find_uv_bin()), "venv", "-q", "--seed", "--python", sys.executable, str(venv)],
        check=True,
        timeout=300,
    )
    return venv


def test_github_format_annotates_the_file_and_line(project: Path) -> None:
    proc = sparkenv("check", "requirements.txt", "--format", "github", cwd=project)
    assert proc.returncode == 1, proc.stderr
    first, *rest = proc.stdout.splitlines()
    assert first.startswith(
        "::error file=requirements.txt,line=2,title=sparkenv G1 FAIL%3A nvidia-cuda-runtime-cu12::"
    )
    assert "G1 FAIL: nvidia-cuda-runtime-cu12 (requirements.txt:2) is built for CUDA 12" in first
    # then the ordinary report for the log, every finding line in the contract
    assert rest[-1] == "verdict: blocked (1 FAIL)"
    assert all(re.match(r"^G(10|[1-9]) (PASS|FAIL|WARN|SKIP|INFO|ERROR): .+", ln) for ln in rest[:-1])
    both = sparkenv("check", "requirements.txt", "--format", "github", "--json", cwd=project)
    assert both.returncode == 2 and "disagree" in both.stderr
    bad = sparkenv("check", "requirements.txt", "--format", "xml", cwd=project)
    assert bad.returncode == 2 and "--format xml: choose one of text, json, github" in bad.stderr


def test_sarif_for_code_scanning(project: Path) -> None:
    proc = sparkenv("check", "requirements.txt", "--sarif", "sparkenv.sarif", cwd=project)
    assert proc.returncode == 1
    doc = json.loads((project / "sparkenv.sarif").read_text())
    assert doc["version"] == "2.1.0" and doc["$schema"].endswith("sarif-2.1.0.json")
    run = doc["runs"][0]
    assert run["tool"]["driver"]["name"] == "sparkenv"
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == ["G1"]
    assert "CUDA" in run["tool"]["driver"]["rules"][0]["shortDescription"]["text"]
    (result,) = run["results"]
    assert result["ruleId"] == "G1" and result["level"] == "error"
    loc = result["locations"][0]["physicalLocation"]
    assert loc == {"artifactLocation": {"uri": "requirements.txt"}, "region": {"startLine": 2}}
    assert "suppressions" not in result


def test_waivers_file_and_option(project: Path) -> None:
    (project / ".sparkenv-waivers.toml").write_text(
        '[[waiver]]\nid = "G1"\nsubject = "nvidia-cuda-runtime-cu12"\n'
        'reason = "the CUDA 12 runtime is loaded by a vendored tool only; #42"\nexpires = 2099-01-31\n'
    )
    proc = sparkenv("check", "requirements.txt", "--sarif", "s.sarif", cwd=project)
    assert proc.returncode == 0, proc.stdout
    line = next(ln for ln in proc.stdout.splitlines() if "nvidia-cuda-runtime-cu12" in ln)
    assert line.startswith("G1 INFO: waived FAIL: nvidia-cuda-runtime-cu12")
    assert "the CUDA 12 runtime is loaded by a vendored tool only; #42" in line and "until 2099-01-31" in line
    assert proc.stdout.endswith("verdict: ready\n")
    (result,) = json.loads((project / "s.sarif").read_text())["runs"][0]["results"]
    assert result["suppressions"][0]["kind"] == "external"
    assert "#42" in result["suppressions"][0]["justification"]

    (project / ".sparkenv-waivers.toml").write_text(
        (project / ".sparkenv-waivers.toml").read_text().replace("2099-01-31", "2001-01-31")
    )
    expired = sparkenv("check", "requirements.txt", cwd=project)
    assert expired.returncode == 1
    assert "G1 FAIL: the waiver of G1 nvidia-cuda-runtime-cu12 expired on 2001-01-31" in expired.stdout
    assert "G1 FAIL: nvidia-cuda-runtime-cu12 (requirements.txt:2)" in expired.stdout  # not hidden

    (project / ".sparkenv-waivers.toml").unlink()
    waived = sparkenv("check", "requirements.txt", "--waive", "G1:nvidia-cuda-runtime-cu12", cwd=project)
    assert waived.returncode == 0 and "waived on the command line" in waived.stdout
    stale = sparkenv("check", "requirements.txt", "--waive", "G4:nothing", cwd=project)
    assert stale.returncode == 1 and "G4 INFO: waiver for G4 nothing matches no finding" in stale.stdout
    wrong = sparkenv("check", "requirements.txt", "--waive", "torch", cwd=project)
    assert wrong.returncode == 2 and "expected G<number>:<subject>" in wrong.stderr
    (project / "w.toml").write_text('[[waiver]]\nid = "G11"\nsubject = "x"\nreason = "y"\n')
    broken = sparkenv("check", "requirements.txt", "--waivers", "w.toml", cwd=project)
    assert broken.returncode == 2 and broken.stderr.count("\n") == 1
    assert "w.toml: waiver 1: id 'G11' is not G1 … G10" in broken.stderr


def test_colour_on_a_terminal_only(project: Path) -> None:
    red = "\033[1;31mFAIL\033[0m"
    piped = sparkenv("check", "requirements.txt", cwd=project)
    assert "\033[" not in piped.stdout
    assert red in sparkenv("check", "requirements.txt", cwd=project, env={"FORCE_COLOR": "1"}).stdout
    off = sparkenv("check", "requirements.txt", cwd=project, env={"FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert "\033[" not in off.stdout
    # a real terminal: a pseudo-terminal as stdout
    leader, follower = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "sparkenv", "check", "requirements.txt"],
        cwd=project,
        stdout=follower,
        stderr=subprocess.PIPE,
        env={**env, "TERM": "xterm"},
    )
    os.close(follower)
    out = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    proc.wait(timeout=60)
    os.close(leader)
    assert red.encode() in out and b"verdict: \033[1;31mblocked\033[0m" in out
    with_file = sparkenv(
        "check", "requirements.txt", "--report", "r.json", cwd=project, env={"FORCE_COLOR": "1"}
    )
    assert with_file.returncode == 1 and "\033[" not in (project / "r.json").read_text()


def _action_steps() -> list[dict]:
    action = yaml.safe_load((REPO / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    return action, action["runs"]["steps"]


def _expand(text: str, inputs: dict[str, str]) -> str:
    text = text.replace("${{ github.action_path }}", str(REPO))
    return re.sub(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}", lambda m: inputs[m.group(1)], text)


def _run_step(
    step: dict, inputs: dict[str, str], cwd: Path, env: dict[str, str]
) -> subprocess.CompletedProcess:
    """One step of the composite action, as the runner runs it: bash -e -o pipefail, its env expanded;
    what it appends to $GITHUB_ENV (when the caller gives one) is in `env` for the steps after it."""
    step_env = {k: _expand(str(v), inputs) for k, v in (step.get("env") or {}).items()}
    proc = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", _expand(step["run"], inputs)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        env={**env, **step_env},
    )
    if env.get("GITHUB_ENV") and Path(env["GITHUB_ENV"]).is_file():
        for line in Path(env["GITHUB_ENV"]).read_text().splitlines():
            key, _, value = line.partition("=")
            env[key] = value
    return proc


@pytest.mark.network
def test_the_composite_action_runs_as_a_script(tmp_path: Path) -> None:
    """The action's steps, run by bash as the runner would (act-free): a fresh venv is the runner's
    Python; the inputs are the action's defaults plus the project's."""
    action, steps = _action_steps()
    venv = _runner_venv(tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    shutil.copytree(REPO / "lockfiles", project / "lockfiles")  # a project with a lock and its input
    (project / "requirements.txt").write_text("transformers==4.57.1\n")
    inputs = {k: str(v.get("default", "")) for k, v in action["inputs"].items()}
    inputs.update({"requirements": "requirements.txt", "audit": str(venv)})
    env = {
        **os.environ,
        "PATH": f"{venv / 'bin'}:{os.environ['PATH']}",
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
    }
    env.pop("VIRTUAL_ENV", None)
    outputs = []
    for step in steps:
        assert step.get("shell") == "bash", step
        proc = _run_step(step, inputs, project, env)
        assert proc.returncode == 0, f"{step.get('name')}: {proc.stdout[-1500:]}{proc.stderr[-1500:]}"
        outputs.append(proc.stdout)
    assert outputs[0].startswith("sparkenv 0.")  # installed from the action's checkout
    # check, judging the file as sparkenv lock installs it (pinned by the lock: no drift line)
    assert "G1 INFO: checked 1 requirement(s)" in outputs[1] and "verdict: ready" in outputs[1]
    assert "G9 PASS: lockfiles/pylock.ngc-25-11.toml is current" in outputs[2]  # lock --check
    assert "G1 INFO: read " in outputs[3] and "verdict:" in outputs[3]  # audit of the runner's venv
    assert json.loads((project / "sparkenv.sarif").read_text())["version"] == "2.1.0"

    # The same action on a project that breaks the policy: its check step reports with an annotation
    # (the verdict step at the end fails the job: test_the_action_runs_every_step_and_fails_at_the_end).
    (project / "requirements.txt").write_text(CU12)
    check_step = next(s for s in steps if "sparkenv check" in s["run"])
    proc = _run_step(check_step, inputs, project, env)
    assert "::error file=requirements.txt,line=2," in proc.stdout


@pytest.mark.network
def test_pre_commit_hooks_through_try_repo(tmp_path: Path) -> None:
    pre_commit = shutil.which("pre-commit") or str(Path(sys.executable).with_name("pre-commit"))
    project = tmp_path / "project"
    project.mkdir()
    git = ["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], cwd=project, check=True, timeout=60)
    (project / "requirements.txt").write_text(CU12)
    subprocess.run([*git, "add", "requirements.txt"], cwd=project, check=True, timeout=60)
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")}
    env.pop("VIRTUAL_ENV", None)

    def try_repo() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [pre_commit, "try-repo", str(REPO), "sparkenv-check", "--files", "requirements.txt"],
            cwd=project,
            capture_output=True,
            text=True,
            timeout=900,
            env=env,
        )

    bad = try_repo()
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "G1 FAIL: nvidia-cuda-runtime-cu12 (requirements.txt:2)" in bad.stdout
    (project / "requirements.txt").write_text("transformers==4.57.1\n")
    good = try_repo()
    assert good.returncode == 0, good.stdout + good.stderr
    assert "Passed" in good.stdout


def test_the_readme_pins_a_real_commit_that_holds_the_hooks_and_the_action() -> None:
    readme = (REPO / "README.md").read_text()
    revs = set(re.findall(r"(?:rev: |@)([0-9a-f]{40})\b", readme))
    assert revs, "the README's snippets name no commit"
    shallow = subprocess.run(
        ["git", "rev-parse", "--is-shallow-repository"], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    if shallow.stdout.strip() != "false":
        pytest.skip("a shallow or non-git checkout cannot tell whether the README's commit is real")
    for rev in revs:
        hooks = subprocess.run(
            ["git", "show", f"{rev}:.pre-commit-hooks.yaml"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert hooks.returncode == 0, f"{rev}: {hooks.stderr}"
        ids = {h["id"] for h in yaml.safe_load(hooks.stdout)}
        assert {"sparkenv-check", "sparkenv-lock-check"} <= ids
        action = subprocess.run(
            ["git", "show", f"{rev}:action.yml"], cwd=REPO, capture_output=True, timeout=60
        )
        assert action.returncode == 0, f"{rev} has no action.yml"
        ancestor = subprocess.run(["git", "merge-base", "--is-ancestor", rev, "HEAD"], cwd=REPO, timeout=60)
        assert ancestor.returncode == 0, f"{rev} is not in this branch's history"


@pytest.mark.network
def test_the_action_runs_every_step_and_fails_at_the_end(tmp_path: Path) -> None:
    """A failing check no longer hides the lock check and the audit: every step reports, the last one
    fails the job; per-step arguments reach only their step; outputs and a job summary are written."""
    action, steps = _action_steps()
    venv = _runner_venv(tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    shutil.copytree(REPO / "lockfiles", project / "lockfiles")
    (project / "requirements.txt").write_text(CU12)  # the check fails
    inputs = {k: str(v.get("default", "")) for k, v in action["inputs"].items()}
    inputs.update(
        {
            "requirements": "requirements.txt",
            "audit": str(venv),
            "check-args": "--pip",  # a check-only option: lock --check would refuse it
            "lock-check-args": "--output-dir lockfiles",
        }
    )
    files = {name: tmp_path / name for name in ("env", "output", "summary.md")}
    for f in files.values():
        f.touch()
    env = {
        **os.environ,
        "PATH": f"{venv / 'bin'}:{os.environ['PATH']}",
        "GITHUB_ENV": str(files["env"]),
        "GITHUB_OUTPUT": str(files["output"]),
        "GITHUB_STEP_SUMMARY": str(files["summary.md"]),
    }
    env.pop("VIRTUAL_ENV", None)
    codes, outs = [], []
    for step in steps:
        proc = _run_step(step, inputs, project, env)
        codes.append(proc.returncode)
        outs.append(proc.stdout + proc.stderr)
    assert codes == [0, 0, 0, 0, 1], list(zip(codes, outs, strict=True))
    assert "::error file=requirements.txt,line=2," in outs[1]
    assert "G9 PASS: lockfiles/pylock.ngc-25-11.toml is current" in outs[2]  # ran despite the failed check
    assert "G1 INFO: read " in outs[3]  # the audit too
    assert "sparkenv: blocked (check 1, lock --check 0, audit 0)" in outs[4]
    assert files["output"].read_text().splitlines() == ["verdict=blocked", "sarif=sparkenv.sarif"]
    summary = files["summary.md"].read_text()
    assert "`sparkenv check`: exit 1, verdict: blocked" in summary and "**sparkenv: blocked**" in summary


@pytest.mark.network
def test_the_lock_check_hook_passes_with_a_note_without_lockfiles(tmp_path: Path) -> None:
    """pre-commit's sparkenv-lock-check in a repository that has no lockfiles/ yet: passes, says why."""
    pre_commit = shutil.which("pre-commit") or str(Path(sys.executable).with_name("pre-commit"))
    project = tmp_path / "project"
    project.mkdir()
    git = ["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], cwd=project, check=True, timeout=60)
    (project / "requirements.txt").write_text("transformers==4.57.1\n")
    subprocess.run([*git, "add", "requirements.txt"], cwd=project, check=True, timeout=60)
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")}
    env.pop("VIRTUAL_ENV", None)
    proc = subprocess.run(
        [
            pre_commit,
            "try-repo",
            str(REPO),
            "sparkenv-lock-check",
            "--files",
            "requirements.txt",
            "--verbose",
        ],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Passed" in proc.stdout and "no pylock.*.toml in lockfiles: nothing to check" in proc.stdout
