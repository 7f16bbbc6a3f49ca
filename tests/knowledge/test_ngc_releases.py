"""The NGC releases, CUDA releases and drivers sparkenv knows, held to each other: every shipped NGC PyTorch
profile against data/cuda.toml's [ngc] and data/drivers.toml's [toolkit], every value left blank or taken
from a secondary source named in its `unverified` list, every data file dated, and "newer than known"
decided by one function (knowledge/known.py) at the edge of what the files hold."""

from __future__ import annotations

import datetime
import re
from pathlib import Path

import pytest

from sparkenv.core import datafiles
from sparkenv.cuda import driver as drv
from sparkenv.cuda.rules import ngc_release
from sparkenv.environment import profiles
from sparkenv.knowledge import cuda, drivers
from sparkenv.knowledge.known import newer_than_known, newest_cuda, newest_driver, newest_ngc
from sparkenv.rules.g1_driver import Mode, compat_mode

DATA = Path(__file__).resolve().parents[2] / "sparkenv" / "data"
TODAY = datetime.date.today()
NGC_PYTORCH = re.compile(r"ngc-(\d\d\.\d\d)")
NOTES = "https://docs.nvidia.com/deeplearning/frameworks/pytorch-release-notes/rel-{}.html"


def ngc_profiles() -> dict[str, profiles.Profile]:
    """The shipped NGC PyTorch profiles by release (YY.MM): ngc-26.09 -> "26.09" (not ngc-vllm-…)."""
    out = {}
    for name, prof in profiles.shipped().items():
        m = NGC_PYTORCH.fullmatch(name)
        if m:
            out[m.group(1)] = prof
    return out


def _date(value: object, where: str) -> datetime.date:
    text = value.isoformat() if isinstance(value, datetime.date) else str(value)
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", text), f"{where}: reviewed = {text!r} is not YYYY-MM-DD"
    day = datetime.date.fromisoformat(text)
    assert day <= TODAY, f"{where}: reviewed {day} is in the future"
    return day


@pytest.mark.parametrize("path", sorted(DATA.glob("*.toml")) + sorted((DATA / "profiles").glob("*.toml")))
def test_every_data_file_carries_its_review_date(path: Path) -> None:
    data = datafiles.parse_toml(path.read_text(encoding="utf-8"))
    assert "reviewed" in data, f"{path.name} has no top-level `reviewed = YYYY-MM-DD`"
    _date(data["reviewed"], path.name)


def test_every_ngc_release_has_a_profile_and_every_profile_a_release() -> None:
    assert sorted(ngc_profiles()) == sorted(cuda().ngc)
    assert newest_ngc() == max(ngc_profiles())  # the edge the age INFO reads is the newest profile


@pytest.mark.parametrize("release", sorted(ngc_profiles()))
def test_each_ngc_profile_agrees_with_the_cuda_and_driver_tables(release: str) -> None:
    prof = ngc_profiles()[release]
    assert prof.source == NOTES.format(release.replace(".", "-"))
    _date(prof.reviewed, prof.name)
    assert prof.image == f"nvcr.io/nvidia/pytorch:{release}-py3"
    assert prof.env["NVIDIA_PYTORCH_VERSION"] == release
    # torch's .nvYY.MM label names this release (a bare version is allowed only marked UNVERIFIED)
    torch = prof.provides["torch"]
    assert ngc_release(torch) == release or (not ngc_release(torch) and "torch" in prof.unverified), torch
    # the CUDA major cuda.toml gives the release is the profile's CUDA major
    assert cuda().ngc[release] == int(prof.cuda.split(".")[0])
    # the profile's CUDA has its own row in drivers.toml: judged by NVIDIA's minimum, not the newest row
    req = drv.requirement(prof.cuda)
    assert req is not None and req.known, f"{prof.name}: CUDA {prof.cuda} has no row in drivers.toml"
    assert newer_than_known("cuda", prof.cuda) is None
    assert newer_than_known("ngc", release) is None


@pytest.mark.parametrize("name", sorted(profiles.shipped()))
def test_a_value_not_read_from_a_source_is_named_unverified(name: str) -> None:
    """A blank version ("provided, version not recorded") or component is never silent: the profile's
    `unverified` list names it, and the stages say so (rules/data_age.py)."""
    prof = profiles.shipped()[name]
    blank = [k for k, v in {**prof.provides, **prof.components}.items() if not v]
    assert [k for k in blank if k not in prof.unverified] == []


def test_unverified_driver_rows_are_rows_of_the_table() -> None:
    assert set(drivers().unverified) <= set(drivers().toolkit)


# The drivers DGX OS ships on the Spark (580.x; FACTS: 590.x seen on some boxes), and what each NGC
# release's CUDA needs of them: its own minimum, else CUDA 13's minor-version floor. GB10 does not load the
# forward-compatibility libcuda (drivers.toml [forward_compat]), so an image's cuda-compat changes nothing
# there; on a data-center GPU the same image on the same driver runs through it.
@pytest.mark.parametrize("release", sorted(ngc_profiles()))
@pytest.mark.parametrize("host_driver", ["580.95.05", "590.48.01"])
def test_which_compatibility_mode_each_release_runs_in_on_a_spark_driver(
    release: str, host_driver: str
) -> None:
    prof = ngc_profiles()[release]
    req = drv.requirement(prof.cuda)
    assert req is not None
    native = drv.version(host_driver) >= drv.version(req.minimum)
    compat = "620.0.0"  # a cuda-compat libcuda newer than any minimum in the table
    on_gb10 = compat_mode(host_driver, req, compat, "NVIDIA GB10")
    assert on_gb10 is (Mode.NATIVE if native else Mode.MINOR)
    on_h100 = compat_mode(host_driver, req, compat, "NVIDIA H100 80GB HBM3")
    assert on_h100 is (Mode.NATIVE if native else Mode.FORWARD)
    assert compat_mode("575.57.08", req, None, "NVIDIA GB10") is Mode.NONE  # below CUDA 13's floor


def test_the_field_reports_forward_compatibility_on_driver_580_is_minor_version_compatibility() -> None:
    """A 26.09 image (CUDA 13.4) said to run "in forward-compatibility mode on driver 580" on a GB10: the
    driver is below 13.4's minimum and above CUDA 13's floor, and GB10 does not load cuda-compat."""
    req = drv.requirement(ngc_profiles()["26.09"].cuda)
    assert req is not None and drv.version("580.95.05") < drv.version(req.minimum)
    assert compat_mode("580.95.05", req, "615.0.0", "NVIDIA GB10") is Mode.MINOR


def test_newer_than_known_is_decided_at_the_edge_of_the_data() -> None:
    ngc = newest_ngc()
    yy, mm = (int(p) for p in ngc.split("."))
    after = f"{yy + (mm == 12):02d}.{mm % 12 + 1:02d}"
    assert newer_than_known("ngc", ngc) is None
    unknown = newer_than_known("ngc", after)
    assert unknown is not None and unknown.newest == ngc
    assert f"profiles new ngc-{after} --from-image nvcr.io/nvidia/pytorch:{after}-py3" in unknown.refresh

    top = newest_cuda(13)
    major, minor = (int(p) for p in top.split(".")[:2])
    assert newer_than_known("cuda", top) is None
    assert newer_than_known("cuda", f"{major}.{minor}") is None  # torch.version.cuda: no update
    assert newer_than_known("cuda", f"{top}.006") is None  # CUDA_VERSION's build number
    assert newer_than_known("cuda", f"{major}.{minor + 1}") is not None

    branch = int(newest_driver().split(".")[0])
    assert newer_than_known("driver", f"{branch}.99.01") is None  # a newer build of a known branch
    later = newer_than_known("driver", f"{branch + 5}.10.01")
    assert later is not None and "drivers.toml" in later.refresh


@pytest.mark.parametrize(
    ("version", "release"),
    [
        ("2.14.0a0+4fdf77b940.nv26.08", "26.08"),  # torch.__version__
        ("2.14.0a0+4fdf77b940.nv26.8.63802676", "26.08"),  # its installed distribution's METADATA
        ("2.10.0a0+a36e1d39eb.nv26.01.42222806", "26.01"),
        ("2.9.0a0+145a3a7bda.nv25.10", "25.10"),
        ("2.7.4.post1+nv26.2.44259020", "26.02"),
        ("2.9.1+cu130", None),
    ],
)
def test_an_ngc_build_is_recognised_in_both_forms_of_its_version(version: str, release: str | None) -> None:
    assert ngc_release(version) == release


def test_a_profile_whose_unverified_names_nothing_it_holds_is_one_clear_error(tmp_path: Path) -> None:
    text = 'name = "mine"\nimage = "registry.example/me:1"\nunverified = ["cudnn"]\n'
    with pytest.raises(
        Exception, match=r"mine\.toml: unverified names 'cudnn', which the profile does not hold"
    ):
        profiles.parse(text, "mine.toml")
    ok = profiles.parse(text + '[components]\ncudnn = ""\n', "mine.toml")
    assert ok.unverified == ("cudnn",) and ok.components == {"cudnn": ""}


def test_check_says_a_profiles_unverified_values_once(tmp_path: Path) -> None:
    """`sparkenv check` on a profile with UNVERIFIED values: one INFO naming them and how to read them from
    the image; a profile with none says nothing of the kind."""
    import os
    import subprocess
    import sys

    (tmp_path / "requirements.txt").write_text("transformers==4.57.1\n")

    def check(profile: str) -> list[str]:
        proc = subprocess.run(
            [sys.executable, "-m", "sparkenv", "check", "requirements.txt", "--profile", profile],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
            env={**os.environ, "PIP_CERT": "", "SSL_CERT_FILE": ""},
        )
        assert proc.returncode == 0, proc.stderr
        return [ln for ln in proc.stdout.splitlines() if "UNVERIFIED" in ln]

    said = check("ngc-26.09")
    assert len(said) == 1, said
    prof = profiles.shipped()["ngc-26.09"]
    assert said[0].startswith(
        f"G9 INFO: profile ngc-26.09: UNVERIFIED in sparkenv's data — {', '.join(prof.unverified)}"
    )
    assert check("spark-bare") == []


def test_build_says_the_lock_profiles_unverified_values_once(tmp_path: Path) -> None:
    """`sparkenv build --dry-run` (no engine needed) on the shipped lock: its profile's UNVERIFIED values are
    the first line of the report, once."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [sys.executable, "-m", "sparkenv", "build", "--dry-run", "--lock", "lockfiles/pylock.ngc-25-11.toml"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=root,
        env={**os.environ, "SPARKENV_CACHE_DIR": str(tmp_path)},
    )
    assert proc.returncode == 0, proc.stderr
    said = [ln for ln in proc.stdout.splitlines() if "UNVERIFIED in sparkenv's data" in ln]
    unverified = ", ".join(profiles.shipped()["ngc-25.11"].unverified)
    assert said == [
        f"G9 INFO: profile ngc-25.11: UNVERIFIED in sparkenv's data — {unverified} (no public source "
        "confirmed them; sparkenv/data/profiles/ngc-25.11.toml says where each value was read)"
    ]


@pytest.mark.parametrize("name", sorted(n for n in profiles.shipped() if n.startswith("ngc-vllm-")))
def test_each_ngc_vllm_profile_names_its_notes_and_a_known_release(name: str) -> None:
    prof = profiles.shipped()[name]
    release = name.removeprefix("ngc-vllm-")
    notes = "https://docs.nvidia.com/deeplearning/frameworks/vllm-release-notes/rel-{}.html"
    assert prof.source == notes.format(release.replace(".", "-"))
    assert prof.image == f"nvcr.io/nvidia/vllm:{release}-py3"
    assert prof.env["NVIDIA_PYTORCH_VERSION"] == release and release in cuda().ngc
    req = drv.requirement(prof.cuda)
    assert req is not None and req.known, f"{name}: CUDA {prof.cuda} has no row in drivers.toml"
    assert prof.provides["vllm"] and "vllm" in prof.unverified


def test_profiles_lists_what_each_profile_leaves_unverified() -> None:
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "sparkenv", "profiles"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    block = out.split("\nngc-26.09\n", 1)[1].split("\n\n", 1)[0].split("\nngc-", 1)[0]
    unverified = ", ".join(profiles.shipped()["ngc-26.09"].unverified)
    assert f"    UNVERIFIED (no public source confirmed): {unverified}" in block
    held = ", ".join(f"{k} {v}" for k, v in profiles.shipped()["ngc-26.09"].components.items())
    assert f"    holds {held}" in block


def test_a_cuda_major_past_the_driver_table_is_unknown_not_missing() -> None:
    """CUDA 14 on a driver of the newest branch the table knows: an INFO that its minimum is unknown; on an
    older driver, a WARN (below even the newest known release's minimum) saying the same."""
    from sparkenv.core.report import Status
    from sparkenv.rules.g1_driver import judge_driver

    top = newest_cuda()
    past = f"{int(top.split('.')[0]) + 1}.0"
    assert newer_than_known("cuda", past) is not None
    on_newest = judge_driver(drivers().toolkit[top], past)
    assert on_newest.status is Status.INFO
    assert f"CUDA release {past} is newer than any sparkenv knows (newest {top}" in on_newest.summary
    on_old = judge_driver("580.95.05", past)
    assert on_old.status is Status.WARN and "the driver it needs is unknown to sparkenv" in on_old.summary
