"""CI formats keep every place: each SARIF result has a location (code scanning rejects one without), and
a finding met in two input files is annotated on each, in SARIF and in `--format github`. Real CLI runs
on real files: two requirements files, a stale copy of the shipped lock, a synthetic environment."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _results(path: Path) -> list[dict]:  # type: ignore[type-arg]
    return json.loads(path.read_text())["runs"][0]["results"]


def test_the_same_package_in_two_files_is_annotated_on_each(run, tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "a.txt").write_text("peft\ncupy-cuda12x\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.txt").write_text("cupy-cuda12x\n")
    r = run("check", "a.txt", "sub/b.txt", "--format", "github", "--sarif", "s.sarif", cwd=tmp_path)
    assert r.code == 1, r.out + r.err
    annotated = [ln.split("::")[1] for ln in r.lines if ln.startswith("::error") and "cupy-cuda12x" in ln]
    assert annotated == [
        "error file=a.txt,line=2,title=sparkenv G1 FAIL%3A cupy-cuda12x",
        "error file=sub/b.txt,line=1,title=sparkenv G1 FAIL%3A cupy-cuda12x",
    ]
    (cupy,) = [res for res in _results(tmp_path / "s.sarif") if "cupy" in res["message"]["text"]]
    places = [
        (p["physicalLocation"]["artifactLocation"]["uri"], p["physicalLocation"]["region"]["startLine"])
        for p in cupy["locations"]
    ]
    assert places == [("a.txt", 2), ("sub/b.txt", 1)]


def test_every_sarif_result_has_a_location(run, env, tmp_path) -> None:  # type: ignore[no-untyped-def]
    proj = tmp_path / "proj"
    (proj / "lockfiles" / "inputs").mkdir(parents=True)
    (proj / ".git").mkdir()
    for name in ("pylock.ngc-25-11.toml", "requirements.ngc-25-11.txt", "inputs/playbook-unsloth.txt"):
        shutil.copy(REPO / "lockfiles" / name, proj / "lockfiles" / name)
    with (proj / "lockfiles" / "inputs" / "playbook-unsloth.txt").open("a") as fh:
        fh.write("einops\n")  # the lock is stale now
    stale = run("lock", "--check", "--sarif", "lock.sarif", cwd=proj)
    assert stale.code == 1, stale.out + stale.err
    env.add("needs-missing", "1.0", requires=["not-installed-anywhere>=1"])
    audit = run("audit", str(env.prefix), "--sarif", "audit.sarif", cwd=proj)
    assert audit.code == 0 and "G9 WARN: needs-missing" in audit.out, audit.out + audit.err
    for sarif in ("lock.sarif", "audit.sarif"):
        results = _results(proj / sarif)
        assert results, sarif
        for res in results:
            assert res.get("locations"), (sarif, res["message"]["text"])
            assert all(p["physicalLocation"]["artifactLocation"]["uri"] for p in res["locations"])
    (lock_result,) = _results(proj / "lock.sarif")
    assert lock_result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == (
        "lockfiles/pylock.ngc-25-11.toml"
    )


def test_every_github_annotation_has_the_file_sarif_names(run, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """`lock --check --format github` on a stale lock: the annotation had no file= although SARIF names
    the lock; now every annotation carries the place SARIF gives the same finding."""
    proj = tmp_path / "proj"
    (proj / "lockfiles" / "inputs").mkdir(parents=True)
    (proj / ".git").mkdir()
    for name in ("pylock.ngc-25-11.toml", "requirements.ngc-25-11.txt", "inputs/playbook-unsloth.txt"):
        shutil.copy(REPO / "lockfiles" / name, proj / "lockfiles" / name)
    with (proj / "lockfiles" / "inputs" / "playbook-unsloth.txt").open("a") as fh:
        fh.write("einops\n")  # the lock is stale now
    r = run("lock", "--check", "--format", "github", "--sarif", "lock.sarif", cwd=proj)
    assert r.code == 1, r.out + r.err
    annotations = [ln for ln in r.lines if ln.startswith(("::error", "::warning"))]
    places = [
        p["physicalLocation"]["artifactLocation"]["uri"]
        for res in _results(proj / "lock.sarif")
        for p in res["locations"]
    ]
    assert annotations and len(annotations) == len(places), (annotations, places)
    for line, place in zip(annotations, places, strict=True):
        assert line.split("::")[1].split(" ", 1)[1].startswith(f"file={place}"), (line, place)
