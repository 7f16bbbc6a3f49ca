"""sparkenv's runtime wheels for an image: one wheel per package, the one the image's installer would take.

A dependency that ships a compiled wheel beside its pure-Python one (tomli does, since 2.2.1) has two
wheels that fit the image's Python, and uv's pylock lists both. Real uv resolves here against real
wheels served over loopback; the image takes the compiled wheel where it fits its Python and CPU, the
pure one elsewhere, and a package with no wheel for the image is still a one-line error."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sparkenv.core.errors import ServiceMissing
from sparkenv.environment import wheel_tags
from sparkenv.image import runtime
from tests.artifacts import Index, serve

COMPILED = "cp312-cp312-manylinux2014_aarch64.manylinux_2_17_aarch64.manylinux_2_28_aarch64"


@pytest.fixture
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    idx = Index(tmp_path / "index")
    idx.wheel("fastparse", "2.3.0", tag=COMPILED)
    idx.wheel("fastparse", "2.3.0")  # py3-none-any
    idx.wheel("onlywin", "1.0", tag="cp312-cp312-win_amd64")
    server = serve(idx)
    for name in [k for k in os.environ if k.startswith(("UV_", "PIP_"))]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("UV_INDEX_URL", idx.url)
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    yield idx
    server.shutdown()
    server.server_close()


def _chosen(tmp_path: Path, target: runtime.Target, wanted: str) -> list[str]:
    work = tmp_path / f"work-{target.key}-{wanted}"
    work.mkdir()
    text = runtime._resolve(work, [wanted], [], target, timeout=120)
    return [name for name, _, _ in runtime._wheels(text, target)]


def test_the_compiled_wheel_is_taken_where_it_fits_and_the_pure_one_elsewhere(index, tmp_path: Path):
    spark = runtime.Target("3.12", "aarch64", "2.39")
    assert _chosen(tmp_path, spark, "fastparse") == [f"fastparse-2.3.0-{COMPILED}.whl"]
    for other in (runtime.Target("3.11", "aarch64", "2.39"), runtime.Target("3.12", "x86_64", "2.39")):
        assert _chosen(tmp_path, other, "fastparse") == ["fastparse-2.3.0-py3-none-any.whl"]


def test_a_package_without_a_fitting_hashed_wheel_is_one_line(index, tmp_path: Path):
    spark = runtime.Target("3.12", "aarch64", "2.39")
    work = tmp_path / "work"
    work.mkdir()
    text = runtime._resolve(work, ["fastparse"], [], spark, timeout=120)
    assert runtime._wheels(text, spark)  # as uv wrote it: taken
    for broken in (
        text.replace(COMPILED, "cp312-cp312-win_amd64").replace("py3-none-any", "cp311-cp311-win_amd64"),
        text.replace("sha256 =", "md5 ="),
    ):
        with pytest.raises(ServiceMissing) as err:
            runtime._wheels(broken, spark)
        assert "fastparse" in str(err.value) and "\n" not in str(err.value)


def test_the_ranking_is_the_installers():
    ranked = wheel_tags.accepted("3.12", "aarch64", 39)
    names = [
        "tomli-2.3.0-py3-none-any.whl",
        "tomli-2.3.0-cp312-cp312-manylinux2014_aarch64.manylinux_2_17_aarch64.manylinux_2_28_aarch64.whl",
        "tomli-2.3.0-cp312-cp312-win_amd64.whl",
        "tomli-2.3.0-cp311-cp311-manylinux2014_x86_64.manylinux_2_17_x86_64.manylinux_2_28_x86_64.whl",
    ]
    assert wheel_tags.best(names, ranked) == names[1]
    assert wheel_tags.best([names[0], "x-1.0-cp312-abi3-manylinux_2_17_aarch64.whl"], ranked) == (
        "x-1.0-cp312-abi3-manylinux_2_17_aarch64.whl"
    )
    assert wheel_tags.best(names[2:], ranked) is None
    # a wheel for a newer glibc than the target's is not taken
    assert wheel_tags.best(["y-1-cp312-cp312-manylinux_2_40_aarch64.whl"], ranked) is None
