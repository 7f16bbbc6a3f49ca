"""`sparkenv check`: the policy on declared requirements, offline. Every rule both ways."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkenv.core.errors import SparkenvError
from sparkenv.resolve.check import check


def _check(
    tmp_path: Path,
    text: str,
    *args: str,
    name: str = "requirements.txt",
    platform: str | None = None,
    as_pip: bool = False,
):
    path = tmp_path / name
    path.write_text(text)
    profile = args[0] if args else None
    report = check([str(path)], profile, platform, as_pip=as_pip)
    return {(f.id, f.subject): f for f in report.findings}, report


def test_cuda12_name_fails_cuda13_name_passes(tmp_path):
    found, report = _check(tmp_path, "cupy-cuda12x\ncupy-cuda13x\n")
    bad = found[("G1", "cupy-cuda12x")]
    assert bad.status.value == "FAIL" and "CUDA 12" in bad.summary and "cupy-cuda13x" in bad.fix
    assert "requirements.txt:1" in bad.summary  # names the file and line
    assert found[("G1", "cupy-cuda13x")].status.value == "PASS"
    assert report.exit_code() == 1


def test_cuda_labels_both_ways(tmp_path):
    found, _ = _check(tmp_path, "torch==2.9.1+cu128\n", "spark-bare")
    assert found[("G1", "torch")].status.value == "FAIL" and "CUDA 12" in found[("G1", "torch")].summary
    found, _ = _check(tmp_path, "torch==2.9.1+cpu\n", "spark-bare")
    assert found[("G1", "torch")].status.value == "FAIL" and "CPU-only" in found[("G1", "torch")].summary
    found, report = _check(tmp_path, "torch==2.9.1+cu130\n", "spark-bare")
    assert found[("G1", "torch")].status.value == "PASS"
    assert not any(f.status.value == "FAIL" for f in report.findings)


def test_unlabelled_old_torch_pin_warns_on_bare_new_one_does_not(tmp_path):
    found, _ = _check(tmp_path, "torch==2.9.0\n", "spark-bare")
    assert found[("G1", "torch")].status.value == "WARN" and "2.9.0+cu128" in found[("G1", "torch")].summary
    found, _ = _check(tmp_path, "torch==2.11.0\n", "spark-bare")
    assert ("G1", "torch") not in found


def test_versioned_toolkit_wheel_major(tmp_path):
    found, _ = _check(tmp_path, "nvidia-cuda-runtime==12.8.90\nnvidia-cublas==13.1.0.3\n", "spark-bare")
    assert found[("G1", "nvidia-cuda-runtime")].status.value == "FAIL"
    assert found[("G1", "nvidia-cublas")].status.value == "PASS"


def test_cuda12_index_fails(tmp_path):
    found, _ = _check(tmp_path, "--extra-index-url https://download.pytorch.org/whl/cu128\npeft\n")
    assert found[("G1", "https://download.pytorch.org/whl/cu128")].status.value == "FAIL"
    found, _ = _check(tmp_path, "--extra-index-url https://download.pytorch.org/whl/cu130\npeft\n")
    assert ("G1", "https://download.pytorch.org/whl/cu130") not in found


def test_wheel_url_for_another_cpu_fails(tmp_path):
    url = "https://github.com/x/flash_attn-2.8.3+cu12torch2.9cxx11abiTRUE-cp312-cp312-linux_x86_64.whl"
    found, _ = _check(tmp_path, f"flash-attn @ {url}\n", "spark-bare")
    g1 = found[("G1", "flash-attn")]
    assert g1.status.value == "FAIL" and "x86_64" in g1.summary and "CUDA 12" in g1.summary
    ok = "https://example.org/w/foo-1.0-cp312-cp312-manylinux_2_39_aarch64.whl"
    found, _ = _check(tmp_path, f"foo @ {ok}\n", "spark-bare")
    assert ("G1", "foo") not in found


def test_flash_attn_bare_fails_base_provided_passes(tmp_path):
    found, _ = _check(tmp_path, "flash-attn\n", "spark-bare")
    assert (
        found[("G2", "flash-attn")].status.value == "FAIL"
        and "1–1.5 h" in found[("G2", "flash-attn")].summary
    )
    found, _ = _check(tmp_path, "flash-attn\n", "ngc-25.11")
    assert (
        found[("G2", "flash-attn")].status.value == "PASS"
        and "provided by the base" in found[("G2", "flash-attn")].summary
    )
    found, _ = _check(tmp_path, "flash-attn==2.8.3\n", "ngc-25.11")
    assert (
        found[("G2", "flash-attn")].status.value == "FAIL"
        and "2.7.4.post1+25.11" in found[("G2", "flash-attn")].summary
    )


def test_xformers_compiles_on_aarch64_not_on_x86_64(tmp_path):
    found, _ = _check(tmp_path, "xformers==0.0.33\n", "spark-bare")
    assert found[("G2", "xformers")].status.value == "FAIL"
    found, _ = _check(tmp_path, "xformers==0.0.33\n", "spark-bare", platform="linux/amd64")
    assert found[("G2", "xformers")].status.value == "PASS"


def test_torch_pin_that_replaces_the_base_fails_compatible_one_passes(tmp_path):
    found, _ = _check(tmp_path, "torch==2.9.1\n", "ngc-25.11")
    g9 = found[("G9", "torch")]
    assert g9.status.value == "FAIL" and "2.10.0a0+b558c986e8.nv25.11" in g9.summary
    found, _ = _check(tmp_path, "torch>=2.8\n", "ngc-25.11")  # a pre-release base still satisfies >=2.8
    assert found[("G9", "torch")].status.value == "PASS"
    found, _ = _check(tmp_path, "triton==3.1.0\n", "ngc-25.11")  # base ships it as pytorch-triton
    assert (
        found[("G9", "triton")].status.value == "FAIL" and "pytorch-triton" in found[("G9", "triton")].summary
    )


def test_drift_prone_unpinned_warns_pinned_passes(tmp_path):
    """As a plain pip install -r installs the file (--pip); as sparkenv lock does, the lock pins it."""
    found, _ = _check(tmp_path, "transformers>=4.50\n", as_pip=True)
    assert found[("G9", "transformers")].status.value == "WARN"
    found, _ = _check(tmp_path, "transformers==4.57.1\n", as_pip=True)
    assert found[("G9", "transformers")].status.value == "PASS"
    found, _ = _check(tmp_path, "transformers>=4.50\n")
    assert ("G9", "transformers") not in found


def test_unsloth_outside_no_deps_stage_fails_inside_passes(tmp_path):
    found, _ = _check(tmp_path, "unsloth==2026.7.2\n", "ngc-25.11")  # as sparkenv lock stages it
    assert found[("G9", "unsloth")].status.value == "PASS"
    found, _ = _check(tmp_path, "unsloth==2026.7.2\n", "ngc-25.11", as_pip=True)
    assert (
        found[("G9", "unsloth")].status.value == "FAIL"
        and "notebooks#132" in found[("G9", "unsloth")].summary
    )
    found, _ = _check(tmp_path, "# sparkenv: no-deps\nunsloth==2026.7.2\n", "ngc-25.11", as_pip=True)
    assert found[("G9", "unsloth")].status.value == "PASS"
    found, _ = _check(tmp_path, "unsloth==2026.7.2\n", "spark-bare", as_pip=True)  # no base to replace
    assert found[("G9", "unsloth")].status.value == "WARN"


def test_markers_are_evaluated_for_the_target_not_the_host(tmp_path):
    text = 'cupy-cuda12x ; platform_machine == "x86_64"\n'
    found, _ = _check(tmp_path, text)  # aarch64 target on an x86_64 host: does not apply
    assert ("G1", "cupy-cuda12x") not in found
    found, _ = _check(tmp_path, text, platform="linux/amd64")
    assert found[("G1", "cupy-cuda12x")].status.value == "FAIL"
    found, _ = _check(tmp_path, 'cupy-cuda12x ; python_version < "3.12"\n')  # host is 3.11, target 3.12
    assert ("G1", "cupy-cuda12x") not in found


def test_includes_and_constraints_are_read(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "more.txt").write_text("cupy-cuda12x\n")
    (tmp_path / "cons.txt").write_text("cupy-cuda12x==13.0.0\n")
    found, _ = _check(tmp_path, "-r sub/more.txt\n-c cons.txt\npeft\n")
    assert "sub/more.txt:1" in found[("G1", "cupy-cuda12x")].summary


def test_pyproject_dependencies_extras_and_settings(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "demo"\nversion = "1"\ndependencies = [\n  "peft",\n  "flash-attn",\n]\n'
        '[project.optional-dependencies]\ngpu = ["cupy-cuda12x"]\n'
        '[tool.sparkenv]\nprofile = "spark-bare"\nextras = ["gpu"]\n'
    )
    report = check([str(tmp_path / "pyproject.toml")], None, None)
    found = {(f.id, f.subject): f for f in report.findings}
    assert report.profile == "spark-bare"
    assert (
        found[("G2", "flash-attn")].status.value == "FAIL"
        and "pyproject.toml:6" in found[("G2", "flash-attn")].summary
    )
    assert found[("G1", "cupy-cuda12x")].status.value == "FAIL"


def test_clean_file_is_ready(tmp_path):
    _, report = _check(tmp_path, "peft==0.19.1\ntransformers==4.57.1\ndatasets==4.3.0\n")
    assert report.verdict.value == "ready" and report.exit_code(strict=True) == 0


@pytest.mark.parametrize(
    ("text", "expect"),
    [
        ("peft\nbad line here ===\n", "requirements.txt:2: Invalid requirement"),
        ("-r missing.txt\npeft\n", "requirements.txt:1: cannot open included file missing.txt"),
    ],
)
def test_bad_input_names_file_and_line(tmp_path, text, expect):
    with pytest.raises(SparkenvError) as exc:
        _check(tmp_path, text)
    assert expect in str(exc.value) and exc.value.exit_code == 2


def test_cli_exit_codes_and_one_line_errors(tmp_path, run):
    req = tmp_path / "requirements.txt"
    req.write_text("cupy-cuda12x\n")
    r = run("check", str(req))
    assert r.code == 1 and r.lines[-1].startswith("verdict: blocked")
    import re

    from sparkenv.core.report import LINE_RE

    assert all(LINE_RE.match(ln) for ln in r.lines[:-1]), r.out
    r = run("check", str(req), "--profile", "ngc-99.99")
    assert r.code == 2 and "unknown profile 'ngc-99.99'" in r.err and "Traceback" not in r.err
    assert len(r.err.strip().splitlines()) == 1
    r = run("check", str(tmp_path / "nope.txt"))
    assert r.code == 2 and "no such file" in r.err
    req.write_text("peft==0.19.1\n")
    r = run("check", str(req), "--json")
    assert r.code == 0 and r.json()["command"] == "check" and r.json()["profile"] == "ngc-25.11"
    assert re.search(r"verdict", r.out)


def test_user_profile_file(tmp_path, run):
    src = Path(__file__).resolve().parents[2] / "sparkenv" / "data" / "profiles" / "ngc-25.11.toml"
    mine = tmp_path / "unsloth-image.toml"
    mine.write_text(
        src.read_text()
        .replace('name = "ngc-25.11"', 'name = "unsloth-dgx"')
        .replace('torch = "2.10.0a0+b558c986e8.nv25.11"', 'torch = "2.9.1"')
    )
    req = tmp_path / "requirements.txt"
    req.write_text("torch==2.9.1\n")
    r = run("check", str(req), "--profile", str(mine), "--json")
    found = {(f["id"], f["subject"]): f for f in r.json()["findings"]}
    assert r.json()["profile"] == "unsloth-dgx" and found[("G9", "torch")]["status"] == "PASS"
    (tmp_path / "broken.toml").write_text('name = "x"\n')
    r = run("check", str(req), "--profile", str(tmp_path / "broken.toml"))
    assert r.code == 2 and "profile lacks" in r.err


def test_profiles_command_lists_shipped_profiles(run):
    r = run("profiles")
    assert r.code == 0
    for name in ("ngc-25.09", "ngc-25.10", "ngc-25.11 (default)", "ngc-25.12", "ngc-26.01", "spark-bare"):
        assert name in r.out
    data = __import__("json").loads(run("profiles", "--json").out)
    by_name = {p["name"]: p for p in data["profiles"]}
    assert (
        by_name["ngc-25.11"]["digest"].startswith("sha256:")
        and by_name["ngc-25.11"]["manylinux"] == "manylinux_2_39"
    )
    assert all(p["reviewed"] and p["source"] for p in data["profiles"])


def test_a_lock_input_is_judged_as_sparkenv_lock_reads_it(run):
    """The shipped lock's own input: unsloth unpinned and not in a no-deps file is fine as `sparkenv lock`
    installs it (staged; the default, as lock judges it); for `pip install -r` (--pip) it would replace the
    base's torch."""
    from pathlib import Path

    lock_input = str(Path(__file__).resolve().parents[2] / "lockfiles" / "inputs" / "playbook-unsloth.txt")
    as_pip = run("check", "--pip", lock_input)
    assert as_pip.code == 1 and as_pip.line("G9", "unsloth (").startswith("G9 FAIL: unsloth")
    for staged in (run("check", lock_input), run("check", "--lock-input", lock_input)):
        assert staged.code == 0, staged.out
        assert staged.line("G9", "unsloth goes").startswith(
            "G9 PASS: unsloth goes into its own --no-deps stage after the rest, as `sparkenv lock` "
        )
    assert run("check", "--pip", "--lock-input", lock_input).code == 2


def test_the_pre_commit_hooks_file_is_valid_and_runs_what_it_says():
    """pre-commit reads .pre-commit-hooks.yaml with PyYAML; each hook's entry must be a real command."""
    import re as _re
    from pathlib import Path

    import yaml

    root = Path(__file__).resolve().parents[2]
    hooks = yaml.safe_load((root / ".pre-commit-hooks.yaml").read_text())
    assert [h["id"] for h in hooks] == ["sparkenv-check", "sparkenv-check-lock-input", "sparkenv-lock-check"]
    for hook in hooks:
        assert {"id", "name", "entry", "language", "files"} <= set(hook)
        _re.compile(hook["files"])
        assert hook["entry"].split()[0] == "sparkenv"
    lock_input = _re.compile(hooks[1]["files"])
    assert lock_input.search("lockfiles/inputs/playbook-unsloth.txt") and lock_input.search("requirements.in")
    assert not _re.compile(hooks[0]["files"]).search("requirements.in")
