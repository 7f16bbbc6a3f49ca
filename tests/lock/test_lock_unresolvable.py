"""A requirement uv finds no set of versions for is a finding (exit 1), in text, JSON, SARIF and GitHub
annotations, naming the requirement, the cause and the nearest release with a wheel for the target: real
wheels on a loopback index, the real `uv pip compile`. Exit 2 stays for bad usage and unreadable input."""

from __future__ import annotations

import json
import re

import pytest
from artifacts import Index, serve

LINE = re.compile(r"^G(10|[1-9]) (PASS|FAIL|WARN|SKIP|INFO|ERROR): .+")
ARM, X86 = "cp312-cp312-manylinux_2_28_aarch64", "cp312-cp312-manylinux_2_28_x86_64"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory):
    ix = Index(tmp_path_factory.mktemp("index"))
    # like a speech engine whose newer releases ship x86_64 wheels only: 1.2 is the last with an aarch64 one
    ix.wheel("speechy", "2.0", tag=X86)
    ix.wheel("speechy", "1.5", tag=X86)
    ix.wheel("speechy", "1.2", tag=ARM)
    ix.wheel("speechy", "1.2", tag=X86)
    ix.wheel("speechy", "1.0", tag=ARM)
    ix.wheel("neverarm", "1.0", tag=X86)
    ix.wheel("numpy", "2.1.0", tag="cp312-cp312-manylinux_2_17_aarch64")
    ix.wheel("usesspeechy", "1.0", requires=["speechy>=2", "numpy"])
    for i in range(7):
        ix.wheel(f"x86only{i}", "1.0", tag=X86)
    server = serve(ix)
    yield ix
    server.shutdown()


@pytest.fixture
def lock(run, index, tmp_path):
    env = {"UV_CACHE_DIR": str(tmp_path / "uv"), "SPARKENV_CACHE_DIR": str(tmp_path / "sparkenv")}

    def _lock(text: str, *args: str, url: str = ""):
        req = tmp_path / "requirements.txt"
        req.write_text(text)
        out = tmp_path / "out"
        return run(
            "lock", str(req), "--index-url", url or index.url, "--output-dir", str(out), *args, env=env
        )

    return _lock


def test_no_aarch64_wheel_is_a_g1_finding_with_the_nearest_release(lock, tmp_path):
    r = lock("speechy==2.0\n")
    assert r.code == 1, r.out + r.err
    assert "error" not in r.err
    line = r.line("G1", "speechy")
    assert line.startswith("G1 FAIL: speechy 2.0") and "aarch64-manylinux_2_39" in line
    assert "manylinux_2_28_x86_64" in line  # uv's hint: where wheels of 2.0 exist
    # 1.2 is the newest release older than 2.0 with an aarch64 wheel (1.5 has x86_64 only)
    assert "require speechy==1.2, the nearest release with a wheel for aarch64" in line
    assert all(LINE.match(ln) for ln in r.lines if not ln.startswith("verdict:"))
    assert not any(ln.startswith("G9 PASS") and "closed" in ln for ln in r.lines)
    assert r.lines[-1].startswith("verdict: blocked")
    assert not (tmp_path / "out" / "pylock.ngc-25-11.toml").exists()


def test_json_sarif_and_github_carry_the_finding(lock, tmp_path):
    sarif = tmp_path / "report.sarif"
    r = lock("neverarm\n", "--json", "--sarif", str(sarif))
    assert r.code == 1, r.out + r.err
    report = r.json()
    (f,) = [f for f in report["findings"] if f["subject"] == "neverarm"]
    assert (f["id"], f["status"]) == ("G1", "FAIL") and report["verdict"] == "blocked"
    # no release of neverarm has an aarch64 wheel: the fix says so, and names no version
    assert "no release of neverarm on the index has a wheel for aarch64-manylinux_2_39" in f["fix"]
    results = json.loads(sarif.read_text())["runs"][0]["results"]
    assert any("neverarm" in res["message"]["text"] and res["level"] == "error" for res in results)
    g = lock("neverarm\n", "--format", "github")
    assert g.code == 1
    assert any(ln.startswith("::error ") and "neverarm" in ln and "G1 FAIL" in ln for ln in g.lines), g.out


def test_a_dependency_without_a_wheel_names_its_chain_and_the_rest_resolves(lock):
    r = lock("usesspeechy\n", "--json")
    assert r.code == 1, r.out + r.err
    by = {(f["id"], f["subject"]): f for f in r.json()["findings"]}
    f = by[("G1", "speechy")]
    assert "usesspeechy → speechy" in f["summary"] and "the rest was resolved without it" in f["summary"]
    assert "speechy==1.2" in f["fix"] and "usesspeechy" in f["fix"]
    assert ("G9", "closure") not in by  # no "the set is closed" beside a requirement left out


def test_no_version_in_range_is_a_g9_finding(lock):
    r = lock("speechy==9\n", "--json")
    assert r.code == 1, r.out + r.err
    (f,) = [f for f in r.json()["findings"] if f["subject"] == "speechy"]
    assert (f["id"], f["status"]) == ("G9", "FAIL")
    assert "no release of it is in the range asked" in f["summary"]
    assert "speechy==1.2" in f["fix"]  # the newest release with an aarch64 wheel


def test_an_index_that_refuses_is_a_finding_not_an_error(lock, tmp_path):
    ix = Index(tmp_path / "private")
    ix.wheel("numpy", "2.1.0", tag="cp312-cp312-manylinux_2_17_aarch64")
    server = serve(ix, auth="user:secret")  # every request without credentials gets 401
    try:
        r = lock("numpy\n", "--json", url=ix.url)
    finally:
        server.shutdown()
    assert r.code == 1, r.out + r.err
    (f,) = [f for f in r.json()["findings"] if f["subject"] == "numpy"]
    assert f["id"] == "G9" and "401" in f["summary"] and "credentials" in f["fix"]


def test_bad_usage_stays_exit_2(lock, tmp_path):
    r = lock("speechy==2.0\n", "--profile", "no-such-profile")
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1


def test_many_unresolvable_requirements_are_each_a_finding_never_exit_2(lock):
    # past the number of re-resolutions the lock makes, the findings so far are the answer (no lock)
    r = lock("".join(f"x86only{i}\n" for i in range(7)), "--json")
    assert r.code == 1, r.out + r.err
    subjects = {f["subject"] for f in r.json()["findings"] if f["id"] == "G1" and f["status"] == "FAIL"}
    assert len(subjects) >= 6 and subjects <= {f"x86only{i}" for i in range(7)}


def test_the_platforms_hint_ends_where_uv_lists_end():
    # uv's words as uv 0.13 prints them for a release with wheels for three other platforms, then a
    # second hint: the finding names the platforms and nothing of the next hint
    from sparkenv.lock.uvdriver import unresolvable

    stderr = (
        "  × No solution found when resolving dependencies:\n"
        "  ╰─▶ Because speechy==2.0 has no wheels with a matching platform tag "
        "(e.g., `manylinux_2_39_aarch64`) and you require speechy==2.0, we can conclude that your "
        "requirements are unsatisfiable.\n\n"
        "      hint: Wheels are available for `speechy` (v2.0) on the following platforms: "
        "`manylinux_2_28_x86_64`, `win_amd64` and `macosx_11_0_arm64`\n"
        "      hint: another hint\n"
    )
    u = unresolvable("1-packages", stderr)
    assert u is not None and (u.key, u.kind, u.tried) == ("speechy", "platform", "2.0")
    assert u.platforms == "manylinux_2_28_x86_64, win_amd64 and macosx_11_0_arm64"
