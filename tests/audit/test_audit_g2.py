"""G2: flash-attn's origin and fit, and Unsloth next to it."""

from __future__ import annotations


def fa_files(elves, needed=("libcudart.so.13",), arch="x86_64"):
    return {
        "flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so": elves.linked(needed, arch=arch),
        "flash_attn/__init__.py": "",
    }


def test_ngc_flash_attn_passes_and_names_its_origin(env, elves, run, clean_root):
    env.add("flash-attn", "2.7.4.post1+25.10", files=fa_files(elves))
    r = run("audit", str(env.prefix), "--root", str(clean_root))
    line = r.line("G2", "flash-attn")
    assert line.startswith("G2 PASS: flash-attn 2.7.4.post1+25.10, origin: NGC build 25.10")


def test_github_cu12_wheel_fails_in_g1_and_g2(env, elves, run, clean_root):
    env.add(
        "flash-attn",
        "2.8.3+cu12torch2.9cxx11abiTRUE",
        files=fa_files(elves, ("libcudart.so.12",)),
        wheel_tag="cp312-cp312-linux_x86_64",
    )
    r = run("audit", str(env.prefix), "--root", str(clean_root))
    g2 = r.line("G2", "flash-attn")
    assert g2.startswith("G2 FAIL: ") and "GitHub releases" in g2 and "built for CUDA 12" in g2
    assert r.line("G1", "flash-attn").startswith("G1 FAIL")
    assert r.code == 1


def test_sdist_compiled_here_is_named_as_such(env, elves, run, clean_root):
    env.add("flash-attn", "2.8.3", files=fa_files(elves), wheel_tag="cp312-cp312-linux_x86_64")
    line = run("audit", str(env.prefix), "--root", str(clean_root)).line("G2", "flash-attn")
    assert line.startswith("G2 PASS") and "compiled here from the sdist" in line
    env2_site = env.site
    for d in env2_site.glob("flash_attn-*.dist-info"):
        (d / "direct_url.json").write_text(
            '{"url": "file:///src/flash-attention-2.8.3.tar.gz", "archive_info": {}}'
        )
    line = run("audit", str(env.prefix), "--root", str(clean_root)).line("G2", "flash-attn")
    assert "built here from the source archive file:///src/flash-attention-2.8.3.tar.gz" in line


def test_flash_attn_without_its_extension_or_for_another_cpu_fails(tmp_path, elves, run, clean_root):
    from conftest import make_env

    env = make_env(tmp_path / "a", elves)
    env.add("flash-attn", "2.8.3", files={"flash_attn/__init__.py": ""})
    line = run("audit", str(env.prefix), "--root", str(clean_root)).line("G2", "flash-attn")
    assert line.startswith("G2 FAIL") and "no compiled extension" in line
    arm = make_env(tmp_path / "b", elves, "aarch64")
    arm.add("flash-attn", "2.8.3", files=fa_files(elves, arch="x86_64"))
    line = run("audit", str(arm.prefix), "--root", str(clean_root)).line("G2", "flash-attn")
    assert line.startswith("G2 FAIL") and "x86_64, the environment is aarch64" in line


def test_unsloth_next_to_working_flash_attn_warns_until_the_override_is_installed(
    env, elves, run, clean_root
):
    env.add("flash-attn", "2.7.4.post1+25.11", files=fa_files(elves))
    env.add("unsloth", "2026.7.2")
    r = run("audit", str(env.prefix), "--root", str(clean_root))
    line = r.line("G2", "unsloth")
    assert line.startswith("G2 WARN: unsloth 2026.7.2 next to a working flash-attn") and "sdpa" in line
    assert r.code == 0
    (env.site / "sparkenv-sdpa.pth").write_text("import sparkenv.patches\n")
    line = run("audit", str(env.prefix), "--root", str(clean_root)).line("G2", "unsloth")
    assert line.startswith("G2 PASS") and "SDPA override is installed" in line


def test_unsloth_without_flash_attn_is_not_flagged(env, run, clean_root):
    env.add("unsloth", "2026.7.2")
    r = run("audit", str(env.prefix), "--root", str(clean_root))
    assert not [ln for ln in r.lines if "unsloth" in ln]
    assert r.line("G2", "flash-attn").startswith("G2 INFO: flash-attn is not installed")


def test_audit_sees_the_override_that_sparkenv_patch_installs(tmp_path, elves, run, clean_root):
    import subprocess
    import sys

    from conftest import Env

    prefix = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(prefix)], check=True, timeout=120)
    env = Env(prefix, next(prefix.glob("lib/python3*/site-packages")), "x86_64")
    env.add("flash-attn", "2.7.4.post1+25.11", files=fa_files(elves))
    env.add("unsloth", "2026.7.2")
    assert run("audit", str(prefix), "--root", str(clean_root)).line("G2", "unsloth").startswith("G2 WARN")
    assert run("patch", "sdpa", "--install", str(prefix)).code == 0
    line = run("audit", str(prefix), "--root", str(clean_root)).line("G2", "unsloth")
    assert line.startswith("G2 PASS") and "sparkenv-sdpa.pth" in line
    assert run("patch", "sdpa", "--uninstall", str(prefix)).code == 0
    assert run("audit", str(prefix), "--root", str(clean_root)).line("G2", "unsloth").startswith("G2 WARN")
