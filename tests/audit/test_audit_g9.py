"""G9: container markers, NGC torch replaced, drift against a lock."""

from __future__ import annotations

from pathlib import Path

NGC_TORCH = "2.9.0a0+145a3a7bda.nv25.10"


def test_container_markers_under_root(env, run, tmp_path: Path):
    root = tmp_path / "img"
    (root / "run").mkdir(parents=True)
    (root / "run" / ".containerenv").write_text("")
    line = run("audit", str(env.prefix), "--root", str(root)).line("G9", "container")
    assert line == "G9 PASS: inside a container (/run/.containerenv exists)"


def test_no_marker_is_unknown_not_bare_host(env, run, clean_root):
    line = run("audit", str(env.prefix), "--root", str(clean_root)).line("G9", "container")
    assert line.startswith("G9 WARN: no container marker found: if this is a bare pip environment")


def test_pip_replaced_ngc_torch_fails(env, run, tmp_path: Path):
    root = tmp_path / "ngc"
    (root / "etc" / "pip").mkdir(parents=True)
    (root / ".dockerenv").write_text("")
    (root / "etc" / "pip" / "constraint.txt").write_text(
        "torch==2.9.0a0+145a3a7\ntransformers==4.56.2\n# comment\nnot a valid line ===\n"
    )
    env.add("torch", "2.9.1")
    env.add("transformers", "4.57.1")
    r = run("audit", str(env.prefix), "--root", str(root))
    torch = r.line("G9", "torch 2.9.1 is not")
    assert torch.startswith("G9 FAIL: NGC image detected but torch 2.9.1 is not NGC's build")
    tf = r.line("G9", "transformers 4.57.1 replaced")
    assert tf.startswith("G9 WARN") and "transformers==4.56.2" in tf
    assert r.code == 1


def test_ngc_torch_in_place_passes_and_env_variable_is_a_marker(env, run):
    env.add("torch", NGC_TORCH)
    r = run("audit", str(env.prefix), env={"NVIDIA_PYTORCH_VERSION": "25.10"})
    assert r.line("G9", "is the NGC") == f"G9 PASS: torch {NGC_TORCH} is the NGC image 25.10 build"
    r = run("audit", str(env.prefix))
    assert not [ln for ln in r.lines if ln.startswith("G9") and "NGC" in ln]  # no marker, no NGC claim


def test_drift_against_a_hashed_requirements_lock(env, run, clean_root, tmp_path: Path):
    env.add("torch", "2.11.0")
    env.add("transformers", "4.57.1")
    env.add("triton", "3.5.0")
    lock = tmp_path / "requirements.lock"
    lock.write_text(
        "torch==2.11.0 --hash=sha256:" + "a" * 64 + "\n"
        "transformers==4.56.2 \\\n    --hash=sha256:" + "b" * 64 + "\n"
        "xformers>=0.0.33\n"
    )
    r = run("audit", str(env.prefix), "--root", str(clean_root), "--lock", str(lock))
    assert r.line("G9", "torch 2.11.0") == f"G9 PASS: torch 2.11.0 matches {lock}"
    tf = r.line("G9", "transformers drifted")
    assert tf.startswith(f"G9 WARN: transformers drifted: {lock} pins 4.56.2, 4.57.1 is installed")
    assert r.line("G9", "triton 3.5.0").startswith("G9 WARN: triton 3.5.0 is installed but not pinned")


def test_drift_against_a_pylock(env, run, clean_root, tmp_path: Path):
    env.add("transformers", "4.56.2")
    env.add("xformers", "0.0.33")
    lock = tmp_path / "pylock.spark.toml"
    lock.write_text(
        'lock-version = "1.0"\ncreated-by = "test"\n\n'
        '[[packages]]\nname = "transformers"\nversion = "4.56.2"\n'
        '[[packages.wheels]]\nurl = "https://example.invalid/transformers-4.56.2-py3-none-any.whl"\n'
        'hashes = {sha256 = "' + "c" * 64 + '"}\n\n'
        '[[packages]]\nname = "xformers"\nversion = "0.0.32.post2"\n'
        '[[packages.wheels]]\nurl = "https://example.invalid/xformers-0.0.32.post2-cp39-abi3-linux_x86_64.whl"\n'
        'hashes = {sha256 = "' + "d" * 64 + '"}\n'
    )
    r = run("audit", str(env.prefix), "--root", str(clean_root), "--lock", str(lock))
    assert r.line("G9", "transformers 4.56.2").startswith("G9 PASS")
    assert r.line("G9", "xformers drifted").startswith("G9 WARN")


def test_ngc_provided_torch_need_not_be_in_the_lock(env, run, clean_root, tmp_path: Path):
    env.add("torch", NGC_TORCH)
    lock = tmp_path / "req.txt"
    lock.write_text("peft==0.19.1\n")
    r = run("audit", str(env.prefix), "--root", str(clean_root), "--lock", str(lock))
    assert r.line("G9", "provided by").startswith(f"G9 PASS: torch {NGC_TORCH} is provided by the NGC base")


def test_unreadable_locks_are_usage_errors_naming_the_file(env, run, clean_root, tmp_path: Path):
    bad = tmp_path / "req.txt"
    bad.write_text("torch==2.11.0\n!!nonsense\n")
    r = run("audit", str(env.prefix), "--root", str(clean_root), "--lock", str(bad))
    assert r.code == 2 and r.out == ""
    assert r.err.strip().count("\n") == 0 and f"{bad}:2:" in r.err
    broken = tmp_path / "pylock.toml"
    broken.write_text("lock-version = \n")
    r = run("audit", str(env.prefix), "--lock", str(broken))
    assert r.code == 2 and f"{broken}: not valid TOML" in r.err
    invalid = tmp_path / "pylock.x.toml"
    invalid.write_text('lock-version = "1.0"\n')
    r = run("audit", str(env.prefix), "--lock", str(invalid))
    assert r.code == 2 and "not a valid PEP 751 lock" in r.err
    r = run("audit", str(env.prefix), "--lock", str(tmp_path / "missing.txt"))
    assert r.code == 2 and "missing.txt: no such file" in r.err


def test_one_finding_per_subject_when_two_checks_judge_torch(env, run, tmp_path: Path):
    root = tmp_path / "ngc"
    (root / "etc" / "pip").mkdir(parents=True)
    (root / "etc" / "pip" / "constraint.txt").write_text("torch==2.9.0a0+145a3a7\n")
    env.add("torch", "2.9.1")
    lock = tmp_path / "req.txt"
    lock.write_text("torch==2.9.0\n")
    data = run("audit", str(env.prefix), "--root", str(root), "--lock", str(lock), "--json").json()
    torch = [f for f in data["findings"] if f["id"] == "G9" and f["subject"] == "torch"]
    assert len(torch) == 1
    assert torch[0]["status"] == "FAIL"
    assert "not NGC's build" in torch[0]["summary"] and "drifted" in torch[0]["summary"]


def test_a_lock_that_leaves_torch_to_the_base_never_says_pin_it(env, run, clean_root):
    """The shipped NGC lock excludes torch on purpose ([tool.sparkenv] excluded): the audit gives the
    lock's advice (rebuild from the base), not "pin torch==… in the lock" (issue 9)."""
    lock = str(Path(__file__).parents[2] / "lockfiles" / "pylock.ngc-25-11.toml")
    env.add("torch", "2.9.1")  # a PyPI torch where the lock expects the base's
    line = run("audit", str(env.prefix), "--root", str(clean_root), "--lock", lock).line("G9", "torch 2.9.1")
    assert line.startswith("G9 WARN: torch 2.9.1 is not the base's build") and "leaves torch to" in line
    assert "pin torch" not in line and "rebuild from nvcr.io/nvidia/pytorch:25.11-py3" in line
    env2_line = run("audit", str(env.prefix), "--root", str(clean_root), "--lock", lock, "--json").json()
    torch = next(f for f in env2_line["findings"] if f["id"] == "G9" and f["subject"] == "torch")
    assert "[tool.sparkenv] excluded lists torch" in torch["evidence"][0]


def test_the_base_torch_under_a_lock_that_leaves_it_to_the_base_passes(env, run, clean_root):
    lock = str(Path(__file__).parents[2] / "lockfiles" / "pylock.ngc-25-11.toml")
    env.add("torch", NGC_TORCH)
    line = run("audit", str(env.prefix), "--root", str(clean_root), "--lock", lock).line("G9", "intends")
    assert line == f"G9 PASS: torch {NGC_TORCH} is the base's, as {lock} intends"
