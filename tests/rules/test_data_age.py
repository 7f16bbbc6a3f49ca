"""rules/data_age.py: what sparkenv's dated data does not know, said as an INFO with the refresh that
fixes it — an NGC release or a driver branch newer than the data, a shipped profile's UNVERIFIED values."""

from __future__ import annotations

from dataclasses import replace

from sparkenv.core.report import GotchaId, Status
from sparkenv.environment import profiles
from sparkenv.facts.ngc import RELEASE_VARIABLE
from sparkenv.knowledge.known import newer_than_known
from sparkenv.rules import data_age

FUTURE = "99.01"  # an NGC release no data can know yet


def test_a_newer_ngc_release_names_itself_and_the_refresh():
    [f] = data_age.base(GotchaId.G9, FUTURE, "ngc-99.01")
    unknown = newer_than_known("ngc", FUTURE)
    assert unknown is not None
    assert f.id is GotchaId.G9 and f.status is Status.INFO and f.subject == "NGC 99.01"
    assert f.summary == f"ngc-99.01: {unknown.summary()}"
    assert f.evidence == ("NGC release 99.01", f"newest known: {unknown.newest}")
    assert f.fix and f.fix.startswith(
        "sparkenv profiles new ngc-99.01 --from-image nvcr.io/nvidia/pytorch:99.01"
    )
    # every shipped release is known: nothing to say
    assert data_age.base(GotchaId.G9, "25.11", "x") == [] and data_age.base(GotchaId.G9, None, "x") == []


def test_a_newer_driver_branch_names_the_table_to_refresh():
    [f] = data_age.driver(GotchaId.G1, "999.10.01")
    assert f.id is GotchaId.G1 and f.status is Status.INFO
    assert f.summary.startswith("driver 999.10.01 is newer than any sparkenv knows")
    assert f.subject == "driver table (sparkenv/data/drivers.toml)"
    assert f.evidence[0] == "kernel module 999.10.01" and f.evidence[1].startswith(
        "newest driver in the table: "
    )
    assert f.fix and f.fix.startswith("refresh sparkenv/data/drivers.toml")
    assert data_age.driver(GotchaId.G1, "580.95.05") == [] and data_age.driver(GotchaId.G1, None) == []


def test_a_profiles_unverified_values_are_named_with_where_to_read_them():
    prof = profiles.load("ngc-25.09")  # its torchvision version was not confirmed by a public source
    assert prof.unverified
    [f] = data_age.profile(GotchaId.G9, prof)
    assert f.subject == "profile ngc-25.09" and f.status is Status.INFO
    assert f.summary == (
        f"profile ngc-25.09: UNVERIFIED in sparkenv's data — {', '.join(prof.unverified)} (no public source "
        f"confirmed them; {prof.path} says where each value was read)"
    )
    assert f.evidence == (f"source {prof.source}", f"reviewed {prof.reviewed}")
    assert f.fix == (
        "sparkenv profiles new ngc-25.09 --from-image nvcr.io/nvidia/pytorch:25.09-py3 (on a machine that "
        "has it) reads them from the image"
    )
    [f] = data_age.profile(GotchaId.G9, replace(prof, image=""))
    assert f.fix is None  # no image to read them from
    assert data_age.profile(GotchaId.G9, replace(prof, unverified=())) == []


def test_a_profile_of_a_newer_release_by_its_variable_or_its_torch():
    prof = replace(profiles.load("ngc-25.11"), unverified=())
    [f] = data_age.profile(GotchaId.G9, replace(prof, env={**prof.env, RELEASE_VARIABLE: FUTURE}))
    assert f.subject == "NGC 99.01" and f.summary.startswith("ngc-25.11: ")
    env = {k: v for k, v in prof.env.items() if k != RELEASE_VARIABLE}
    torch = prof.provides["torch"].replace("nv25.11", "nv99.01")  # 2.10.0a0+b558c986e8.nv99.01
    [f] = data_age.profile(GotchaId.G9, replace(prof, env=env, provides={**prof.provides, "torch": torch}))
    assert f.subject == "NGC 99.01"


def test_a_profiles_several_unverified_values_are_listed_one_by_one():
    prof = profiles.load("ngc-26.01")  # its digest, transformer-engine and torchvision are unconfirmed
    assert len(prof.unverified) > 1
    [f] = data_age.profile(GotchaId.G9, prof)
    listed = f.summary.split(" — ", 1)[1].split(" (no public source", 1)[0]
    assert listed.split(", ") == list(prof.unverified)
