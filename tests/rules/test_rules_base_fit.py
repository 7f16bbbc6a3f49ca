"""rules/base_fit.py: a base as read against a lock's profile, one row per kind of difference. The base's
facts are those of a real NGC 25.11 profile's image (the shipped profile's values), changed one at a time."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sparkenv.environment import profiles
from sparkenv.facts.base_image import BaseImage
from sparkenv.rules.base_fit import differences

NGC = profiles.load("ngc-25.11")
SAME = BaseImage(
    image="nvcr.io/nvidia/pytorch:25.11-py3",
    python="3.12.3",
    implementation="CPython",
    machine="aarch64",
    architecture="arm64",
    glibc="2.39",
    dists={**dict(NGC.provides), "numpy": "1.26.4"},
)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({}, []),
        ({"python": "3.12.11"}, []),  # the same minor: the same wheels
        ({"glibc": "2.41"}, []),  # newer: every wheel for 2.39 runs there
        ({"python": "3.13.5"}, ["Python 3.13.5 (the profile: 3.12.3)"]),
        ({"implementation": "PyPy"}, ["Python PyPy 3.12.3 (the profile: CPython 3.12.3)"]),
        ({"architecture": "amd64", "machine": "x86_64"}, ["CPU x86_64 (the profile: aarch64)"]),
        ({"glibc": "2.35"}, ["glibc 2.35 (the profile: 2.39)"]),
        ({"glibc": ""}, ["glibc none (not a glibc system) (the profile: 2.39)"]),
        (
            {"dists": {**dict(NGC.provides), "torch": "2.9.1"}},
            [f"torch 2.9.1 (the profile: {NGC.provides['torch']})"],
        ),
        (
            {"dists": {k: v for k, v in NGC.provides.items() if k != "torchao"}},
            [f"torchao absent (the profile: {NGC.provides['torchao']})"],
        ),
        # names as installed (Transformer_Engine) and versions as spelled differ; the same distribution
        (
            {
                "dists": {
                    ("Transformer_Engine" if k == "transformer-engine" else k): v
                    for k, v in NGC.provides.items()
                }
            },
            [],
        ),
        # a release spelled without its trailing .0 is the same release (compared as versions, not text)
        ({"dists": {**dict(NGC.provides), "torchao": "0.14+git"}}, []),
        # a version PEP 440 cannot read is compared as text: another text is a difference, the same is not
        (
            {"dists": {**dict(NGC.provides), "torch": "2.10.0-nv custom"}},
            [f"torch 2.10.0-nv custom (the profile: {NGC.provides['torch']})"],
        ),
        # the configuration's architecture decides when platform.machine() says nothing
        ({"machine": ""}, []),
        # a CPU neither name maps is shown as the image's python3 names it
        ({"architecture": "riscv64", "machine": "riscv64"}, ["CPU riscv64 (the profile: aarch64)"]),
        ({"architecture": "", "machine": ""}, ["CPU unknown (the profile: aarch64)"]),
    ],
)
def test_differences(change: dict, expected: list[str]) -> None:
    found = differences(replace(SAME, **change), NGC, "aarch64")
    assert [d.describe() for d in found] == expected


def test_the_builds_platform_is_the_cpu_compared() -> None:
    """--platform linux/amd64 for an arm64 base: the CPU differs, whatever the profile says."""
    assert [d.what for d in differences(SAME, NGC, "x86_64")] == ["CPU"]


def test_a_provided_package_without_a_recorded_version() -> None:
    """ngc-25.10 records that the image provides torchvision, not at which version: any version passes,
    its absence is a difference that says so."""
    ngc10 = profiles.load("ngc-25.10")
    assert ngc10.provides["torchvision"] == ""
    base = replace(SAME, dists={**dict(ngc10.provides), "torchvision": "0.24.0a0+98f8b375"})
    assert differences(base, ngc10, "aarch64") == []
    base = replace(SAME, dists={k: v for k, v in ngc10.provides.items() if k != "torchvision"})
    assert [d.describe() for d in differences(base, ngc10, "aarch64")] == [
        "torchvision absent (the profile: provided)"
    ]
