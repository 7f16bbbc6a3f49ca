"""No input is dropped silently: editable, VCS and local-path lines are judged by the name they carry
(`#egg=`, `name @ url`) and otherwise named in an INFO saying what cannot be checked before install;
PEP 735 [dependency-groups] are read with --group (include-group followed). Real files, the real CLI."""

from __future__ import annotations

import json


def _findings(r) -> dict[tuple[str, str], dict]:  # type: ignore[no-untyped-def,type-arg]
    return {(f["id"], f["subject"]): f for f in json.loads(r.out)["findings"]}


def test_editable_vcs_and_path_lines_are_judged_or_named(run, tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "requirements.txt").write_text(
        "-e git+https://github.com/unslothai/unsloth#egg=unsloth\n"
        "cupy @ git+https://github.com/cupy/cupy@v13.6.0\n"
        "nvidia-cuda-runtime-cu12 @ https://example.invalid/nvidia_cuda_runtime_cu12-12.8.90-py3-none-any.whl\n"
        "./vendored/thing\n"
    )
    r = run("check", "requirements.txt", "--pip", "--json", cwd=tmp_path)
    found = _findings(r)
    assert r.code == 1, r.out + r.err
    # judged by name: the family with its dependencies, a CUDA-12 name behind a URL
    assert found[("G9", "unsloth")]["status"] == "FAIL"
    assert found[("G1", "nvidia-cuda-runtime-cu12")]["status"] == "FAIL"
    # and said: what cannot be checked before install, the nameless path by its text
    assert "is an editable requirement" in found[("G9", "unsloth")]["summary"]
    path = next(
        f for (gid, subject), f in found.items() if gid == "G9" and subject.endswith("vendored/thing")
    )
    assert path["status"] == "INFO" and "has no name: nothing about it is judged" in path["summary"]
    counted = found[("G1", "inputs")]["summary"]
    assert counted.startswith("checked 3 requirement(s)"), counted


def test_dependency_groups_are_read_with_group(run, tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\nversion = "1"\ndependencies = ["peft"]\n\n'
        "[dependency-groups]\n"
        'train = ["cupy-cuda12x", {include-group = "common"}]\n'
        'common = ["nvidia-cuda-runtime-cu12"]\n'
    )
    plain = run("check", "pyproject.toml", cwd=tmp_path)
    assert plain.code == 0, plain.out  # groups are not part of the project's own dependencies
    r = run("check", "pyproject.toml", "--group", "train", cwd=tmp_path)
    assert r.code == 1, r.out + r.err
    assert r.line("G1", "cupy-cuda12x").startswith("G1 FAIL: cupy-cuda12x (pyproject.toml:7)")
    assert r.line("G1", "nvidia-cuda-runtime-cu12").startswith("G1 FAIL")  # through include-group
    missing = run("check", "pyproject.toml", "--group", "nope", cwd=tmp_path)
    assert missing.code == 2 and "no [dependency-groups] group 'nope'" in missing.err
