"""rules/g1_driver.py: the host driver against a CUDA release, each way the judgement goes (native,
forward compatibility, minor-version compatibility, none; a release past the table, one without a row of
its own), with the words and the fix each gives — the drivers DGX OS ships (580.x), NGC images' CUDA
releases, the dated table in sparkenv/data/drivers.toml."""

from __future__ import annotations

from sparkenv.core.report import Status
from sparkenv.cuda import driver as drv
from sparkenv.knowledge import drivers
from sparkenv.rules.g1_driver import Mode, compat_mode, driver_for_image, judge_driver

SOURCE = drivers().source
NEWEST = max(drivers().toolkit, key=lambda r: tuple(map(int, r.split("."))))
UPGRADE = (
    "update the host driver to >= 580.95.05 (DGX OS: sudo apt update && sudo apt full-upgrade, then reboot)"
)


def test_native_pass_with_its_evidence():
    f = judge_driver("580.95.05", "13.0.2", where="PyTorch 2.11.0+cu130")
    assert f.status is Status.PASS and f.subject == "driver" and f.fix is None
    assert f.summary == "driver 580.95.05 runs CUDA 13.0.2 of PyTorch 2.11.0+cu130 (needs >= 580.95.05)"
    assert f.evidence == ("kernel module 580.95.05", f"CUDA 13.0.2 needs >= 580.95.05 ({SOURCE})")


def test_no_driver_or_no_release():
    f = judge_driver(None, "13.0.2")
    assert (
        f.status is Status.SKIP
        and f.summary == "no NVIDIA driver found: nothing to compare the CUDA release with"
    )
    f = judge_driver("580.95.05", None, where="PyTorch 2.9.1")
    assert f.status is Status.INFO and f.summary == "driver 580.95.05; CUDA release of PyTorch 2.9.1 unknown"


def test_below_the_floor_fails_with_the_upgrade_and_an_older_image():
    f = judge_driver("575.57.08", "13.0.2")
    assert f.status is Status.FAIL
    assert f.summary == (
        "driver 575.57.08 cannot run CUDA 13.0.2 of the image: it needs >= 580.95.05 (CUDA 13.x needs at "
        "least 580 even under minor version compatibility)"
    )
    assert f.fix == f"{UPGRADE}, or use an image built for CUDA <= 12.9.1"
    # at build time the image may meet a newer driver elsewhere: a WARN with the same words
    b = driver_for_image("575.57.08", "13.0.2", "the image")
    assert b.status is Status.WARN and b.summary == f.summary and b.fix == f.fix
    assert driver_for_image("580.95.05", "13.0.2", "the image").status is Status.PASS


def test_minor_version_compatibility_on_a_spark_with_cuda_compat_in_the_image():
    f = judge_driver("580.82.07", "13.0.2", compat_libcuda="580.95.05", gpu_name="NVIDIA GB10")
    assert f.status is Status.WARN
    assert f.summary.startswith(
        "driver 580.82.07 is older than CUDA 13.0.2 of the image needs (>= 580.95.05): it runs only under "
        "CUDA minor version compatibility — not forward compatibility: the image's cuda-compat libcuda "
        "580.95.05 does not load on NVIDIA GB10, whatever the container's banner says — PTX from this toolkit"
    )
    assert f.summary.endswith("NGC's entrypoint reports 'built for NVIDIA Driver Release 580.95 or later'")
    assert f.evidence[-1] == "forward-compatibility libcuda 580.95.05: not supported on NVIDIA GB10"
    assert f.fix == f"{UPGRADE}, or use an image built for CUDA <= 13.0.1"
    plain = judge_driver("580.82.07", "13.0.2")
    assert "not forward compatibility" not in plain.summary and len(plain.evidence) == 2


def test_forward_compatibility_on_a_data_center_gpu():
    f = judge_driver("575.57.08", "13.0.2", compat_libcuda="580.95.05", gpu_name="NVIDIA H200")
    assert f.status is Status.WARN
    assert f.summary == (
        "driver 575.57.08 is older than CUDA 13.0.2 needs (>= 580.95.05); the image runs only through its "
        "forward-compatibility libcuda 580.95.05, which loads on data-center GPUs only (cuInit error 804 "
        "elsewhere; NGC prints 'compatibility mode is UNAVAILABLE')"
    )
    assert f.evidence[-1] == "forward-compatibility libcuda 580.95.05"
    assert f.fix == f"{UPGRADE}, or use an image built for CUDA <= 12.9.1"


def test_compat_mode_is_the_one_decision():
    req = drv.requirement("13.0.2")
    assert req is not None
    assert compat_mode("580.95.05", req) is Mode.NATIVE
    assert compat_mode("580.82.07", req) is Mode.MINOR
    assert compat_mode("580.0.1", req) is Mode.MINOR  # the major's floor is 580
    assert compat_mode("575.57.08", req) is Mode.NONE
    assert compat_mode("575.57.08", req, "580.95.05", "NVIDIA H200") is Mode.FORWARD
    assert compat_mode("575.57.08", req, "580.95.05", None) is Mode.FORWARD
    assert compat_mode("575.57.08", req, "580.95.05", "NVIDIA GB10") is Mode.NONE
    assert compat_mode("575.57.08", req, "575.57.08", "NVIDIA H200") is Mode.NONE  # too old to stand in


def test_a_release_without_a_row_is_judged_by_the_nearest_older_and_says_so():
    f = judge_driver("580.95.05", "13.0.5")
    assert f.status is Status.WARN
    assert f.summary == (
        f"driver 580.95.05 runs CUDA 13.0.5 of the image (needs >= 580.95.05); CUDA 13.0.5 has no row in the "
        f"table (reviewed {drv.reviewed()}): judged by the nearest older release, 13.0.2"
    )
    assert f.fix == f"refresh sparkenv/data/drivers.toml from NVIDIA's table ({SOURCE})"


def test_a_major_not_in_the_table():
    f = judge_driver("580.95.05", "11.8.0")
    assert f.status is Status.WARN and f.evidence == ("CUDA 11.8.0",)
    assert f.summary == (
        f"driver 580.95.05; CUDA 11.8.0 of the image is not in sparkenv's driver table (data/drivers.toml, "
        f"reviewed {drv.reviewed()})"
    )
    assert f.fix == "check NVIDIA's CUDA toolkit release notes for its minimum driver"


def test_a_release_newer_than_the_table():
    newest_min = drivers().toolkit[NEWEST]
    # a new major: nothing in the table says what it needs; below even the newest known minimum: WARN
    f = judge_driver("580.95.05", "14.0")
    assert f.status is Status.WARN and f.evidence == ("CUDA 14.0",)
    assert f.summary.startswith(
        "driver 580.95.05; the image: CUDA release 14.0 is newer than any sparkenv knows"
    )
    assert f.fix and f.fix.startswith("refresh sparkenv/data/drivers.toml [toolkit]")
    assert judge_driver(f"{newest_min}.99", "14.0").status is Status.INFO
    # a newer update of a known major on a driver that runs every known release: INFO, never PASS
    f = judge_driver(f"{newest_min}.99", "13.99.0")
    assert f.status is Status.INFO
    assert f.summary.startswith(
        f"driver {newest_min}.99 runs every CUDA release up to {NEWEST} ({NEWEST} needs >= "
    )
    assert "the image: CUDA release 13.99.0 is newer than any sparkenv knows" in f.summary
    assert f.fix and f.fix.startswith("refresh sparkenv/data/drivers.toml [toolkit]")
    # below it: judged by the newest row, and said so
    f = judge_driver("590.48.01", "13.99.0")
    assert f.status is Status.WARN
    assert f", so it is judged by the newest {NEWEST} (refresh sparkenv/data/drivers.toml" in f.summary


def test_an_unverified_row_says_its_minimum_is_a_branch():
    for row in drivers().unverified:
        f = judge_driver("999.1", row)
        assert f.evidence[-1] == (
            f"UNVERIFIED: {drivers().toolkit[row]} is the driver branch NVIDIA's notes name for CUDA {row}, "
            "not its exact minimum"
        )


def test_a_driver_that_runs_no_release_is_told_only_to_update():
    f = judge_driver("500.10", "13.0.2")
    assert f.status is Status.FAIL and drv.newest_supported(drv.version("500.10")) is None
    assert f.fix == UPGRADE


def test_the_majors_floor_itself_runs_under_minor_version_compatibility():
    req = drv.requirement("13.0.2")
    assert req is not None and req.floor == (580,)
    assert compat_mode("580", req) is Mode.MINOR
