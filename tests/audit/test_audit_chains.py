"""The audit names the whole chain that pulled a package in, through extras and markers, read from the
installed METADATA of real wheels (built here, installed by unzipping them into site-packages)."""

from __future__ import annotations

import zipfile

from artifacts import Index

LINUX = ' and sys_platform == "linux"'


def _install(env, ix: Index) -> None:
    for whl in sorted((ix.root / "files").glob("*.whl")):
        with zipfile.ZipFile(whl) as zf:
            zf.extractall(env.site)


def test_a_cuda12_package_pulled_in_through_an_extra_names_the_whole_chain(
    env, elves, run, clean_root, tmp_path
):
    ix = Index(tmp_path / "index")
    tag = f"cp312-cp312-manylinux_2_17_{env.arch}"
    ix.wheel(
        "cupy-cuda12x",
        "13.6.0",
        tag=tag,
        files={"cupy_backends/cuda/_runtime.so": elves.linked(("libcudart.so.12",)).read_bytes()},
    )
    ix.wheel("rayish", "2.48.0", requires=[f'cupy-cuda12x; extra == "cgraph"{LINUX}', "packaging"])
    ix.wheel("servery", "0.11.0", requires=["rayish[cgraph]>=2.48"])
    ix.wheel("packaging", "25.0")
    _install(env, ix)
    r = run("audit", str(env.prefix), "--root", str(clean_root))
    assert r.code == 1, r.out + r.err
    line = r.line("G1", "cupy-cuda12x 13.6.0")
    assert line.startswith("G1 FAIL: "), line
    assert "(via servery → rayish[cgraph] → cupy-cuda12x)" in line, line
    # required through an extra is required: not "residue nobody installed requires"
    assert "nobody installed requires" not in line and "required by rayish" in line
    assert "fix rayish first" in line


def test_an_extra_of_a_root_counts_when_what_it_adds_is_installed(env, elves, run, clean_root, tmp_path):
    ix = Index(tmp_path / "index")
    tag = f"cp312-cp312-manylinux_2_17_{env.arch}"
    ix.wheel(
        "nvidia-cublas-cu12",
        "12.8.4.1",
        tag=tag,
        files={"nvidia/cublas/lib/libcublas.so.12": elves.stub("libcublas.so.12").read_bytes()},
    )
    ix.wheel("trainer", "1.0", requires=['nvidia-cublas-cu12; extra == "gpu"', 'rich; extra == "ui"'])
    _install(env, ix)
    r = run("audit", str(env.prefix), "--root", str(clean_root))
    line = r.line("G1", "nvidia-cublas-cu12 12.8.4.1")
    # trainer[gpu] was installed (all it adds is there); trainer[ui] was not (rich is missing)
    assert line.startswith("G1 FAIL: ") and "(via trainer[gpu] → nvidia-cublas-cu12)" in line, line
