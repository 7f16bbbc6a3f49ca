"""rules/g9_lock_and_image.py and rules/g9_live.py (G9): the words each verdict gives and the edges where
they change — the lock written or not (and why), a written lock current or stale with the command that
re-locks it as the user types it, the base's packages after the image's install steps, and on the running
machine the container markers, NGC's torch (`2.10.0a0+b558c986e8.nv25.11` from the ngc-25.11 profile)
kept or replaced, Triton's ptxas variable. The live rows start from snapshots recorded on real machines
and the GB10's public reports (tests/fixtures/facts)."""

from __future__ import annotations

import stage_facts as sf

from sparkenv.core.report import GotchaId, Status
from sparkenv.environment import profiles
from sparkenv.facts.image import BaseCheck, Change
from sparkenv.facts.lockfile import Currency, LockFileFacts, Outcome
from sparkenv.rules import g9_live, g9_lock_and_image
from sparkenv.rules.g9_installed import NO_CONTAINER_FIX

NGC_TORCH = profiles.load("ngc-25.11").provides["torch"]
CURRENT = {
    "pylock": "p.toml",
    "output_dir": "out",
    "inputs": ("req.txt", "extra.txt"),
    "profile": "ngc-25.11",
}
REGEN = "run sparkenv lock req.txt extra.txt --profile ngc-25.11 --output-dir out"


def one(found, subject):
    mine = [f for f in found if f.subject == subject]
    assert len(mine) == 1 and mine[0].id is GotchaId.G9, found
    return mine[0]


# --- Stage.LOCKFILE ---------------------------------------------------------------------------------------


def outcome(**kw):
    [f] = g9_lock_and_image.lockfile(LockFileFacts(outcome=Outcome("p.toml", "r.txt", **kw)))
    return f


def test_lock_written():
    f = outcome(packages=3, stages=2)
    assert (f.status, f.subject, f.evidence) == (Status.PASS, "p.toml", ("r.txt",))
    assert (
        f.summary == "wrote p.toml and r.txt: 3 packages, every one pinned with hashes (2 install stage(s))"
    )
    assert (
        outcome().summary
        == "wrote p.toml and r.txt: nothing to lock beyond the base: every requirement is the base's"
    )


def test_lock_not_written():
    unknown = outcome(unknown=2)
    assert (unknown.status, unknown.subject) == (Status.FAIL, "lock")
    assert unknown.summary == "p.toml not written: 2 file(s) could not be checked (see the ERROR lines)"
    assert unknown.fix == "make every file's metadata readable, then lock again"
    for kw in ({"fails": 1}, {"fails": 1, "unknown": 1}):
        f = outcome(**kw)
        assert (f.status, f.subject, f.summary, f.fix) == (
            Status.INFO,
            "lock",
            "p.toml not written: the resolved set fails the policy",
            None,
        )
    inputs = outcome(inputs_fail=True, fails=1, packages=2)
    assert (inputs.status, inputs.subject, inputs.summary) == (
        Status.INFO,
        "lock",
        "not resolved and no lock written: the inputs fail the policy",
    )


def currency(**kw):
    [f] = g9_lock_and_image.lockfile(LockFileFacts(checked=(Currency(**{**CURRENT, **kw}),)))
    assert f.subject == "p.toml"
    return f


def test_current_lock_names_its_inputs_as_typed():
    f = currency(digest="sha256:x", command_inputs=("../req.txt",))
    assert (f.status, f.evidence) == (Status.PASS, ("sha256:x",))
    assert f.summary == "p.toml is current with ../req.txt (ngc-25.11)"
    assert currency().summary == "p.toml is current with req.txt, extra.txt (ngc-25.11)"


def test_stale_lock_lists_every_problem_and_the_command():
    f = currency(
        other_format=True,
        inputs_changed=True,
        profile_changed=True,
        requirements_missing="r.txt",
        requirements_disagree="pins torch 2.9.1, the pylock 2.10.0",
    )
    assert f.status is Status.FAIL and f.fix == REGEN
    assert f.summary == (
        "p.toml is stale: written by another sparkenv lock format; inputs changed since the lock (req.txt, "
        "extra.txt); profile ngc-25.11 changed since the lock; r.txt is missing; its hashed requirements "
        "file disagrees: it pins torch 2.9.1, the pylock 2.10.0"
    )
    typed = currency(inputs_changed=True, command_inputs=("a/req.txt",), command_profile="profiles/p.toml")
    assert typed.summary == "p.toml is stale: inputs changed since the lock (a/req.txt)"
    assert typed.fix == "run sparkenv lock a/req.txt --profile profiles/p.toml --output-dir out"


def test_missing_lock_or_input():
    gone = currency(exists=False)
    assert (gone.status, gone.summary, gone.fix) == (Status.FAIL, "p.toml does not exist", REGEN)
    unreadable = currency(exists=False, profile="")
    assert unreadable.fix == "run sparkenv lock INPUT… (this sparkenv's lock format)"
    lost = currency(missing_input="req.txt", exists=False)
    assert lost.summary == "p.toml records input req.txt, which no longer exists"
    assert lost.fix == "run sparkenv lock again with the current inputs"


def test_no_lock_in_the_project():
    [f] = g9_lock_and_image.lockfile(LockFileFacts(none_in="locks"))
    assert (f.status, f.subject) == (Status.INFO, "locks")
    assert f.summary == "no pylock.*.toml in locks: nothing to check (sparkenv lock INPUT… writes one)"
    assert g9_lock_and_image.lockfile(LockFileFacts()) == []


# --- Stage.IMAGE ------------------------------------------------------------------------------------------


def test_base_packages_after_the_install_steps():
    facts = BaseCheck(
        provided=("torch", "pytorch-triton", "numpy"),
        replaced=(Change("torch", (NGC_TORCH,), ("2.9.1",)),),
        moved=(Change("numpy", ("1.26.4",), ("2.3.0",)),),
    )
    found = g9_lock_and_image.image(facts)
    torch = one(found, "torch")
    assert torch.status is Status.FAIL
    assert torch.summary == f"a package the base provides was replaced: torch {NGC_TORCH} -> 2.9.1"
    assert torch.evidence == ("/opt/sparkenv/base-packages.json",)
    assert torch.fix == (
        "the lock must not carry what the base provides: re-lock with `sparkenv lock` for this profile, or "
        "drop these pins"
    )
    numpy = one(found, "numpy")
    assert (numpy.status, numpy.summary) == (
        Status.INFO,
        "a package of the base changed: numpy 1.26.4 -> 2.3.0",
    )
    assert not [f for f in found if f.subject == "base"]
    [ok] = g9_lock_and_image.image(BaseCheck(provided=("torch", "numpy"), replaced=(), moved=()))
    assert (ok.status, ok.subject, ok.summary) == (
        Status.PASS,
        "base",
        "the base's 2 provided packages are untouched",
    )


# --- Stage.LIVE -------------------------------------------------------------------------------------------


def test_container_markers_on_the_running_machine():
    f = one(g9_live.live(sf.live_raw("h200-static")), "container")
    assert f.status is Status.PASS and f.summary == "inside a container (/.dockerenv exists)"
    assert f.evidence == ("/.dockerenv exists",)
    bare = one(g9_live.live(sf.live_raw("h200-static", container__markers=[])), "container")
    assert bare.summary == (
        "no container marker found (unknown, not necessarily bare host): a bare pip environment drifts"
    )
    assert bare.fix == NO_CONTAINER_FIX
    failed = sf.live_raw("h200-static", container=None, probe_errors={"container": "permission denied"})
    assert one(g9_live.live(failed), "container").status is Status.ERROR


def _ngc(torch_version):
    """The H200 snapshot inside an NGC 25.11 image, with torch (as its distributions list it) at a version."""
    f = sf.live_raw("h200-static", env={"NVIDIA_PYTORCH_VERSION": "25.11"})
    f.raw["dists"]["torch"] = torch_version
    return f


def test_ngc_torch_on_the_running_machine():
    f = one(g9_live.live(_ngc(NGC_TORCH)), "torch")
    assert (f.status, f.summary) == (Status.PASS, f"torch {NGC_TORCH} is the NGC image 25.11 build")
    assert f.evidence == ("NVIDIA_PYTORCH_VERSION=25.11",)
    r = one(g9_live.live(_ngc("2.9.1")), "torch")
    assert r.status is Status.FAIL
    assert (
        r.summary == "NGC image 25.11 detected but torch 2.9.1 is not NGC's build: a pip install replaced it"
    )
    plain = sf.live_raw("h200-static", env={})
    plain.raw["dists"]["torch"] = NGC_TORCH
    assert not [x for x in g9_live.live(plain) if x.subject == "torch"]


def test_torch_as_imported_wins_over_the_distribution_list():
    f = sf.live_raw("gb10", env={"NVIDIA_PYTORCH_VERSION": "25.11"})
    f.raw["torch"]["stages"]["imported"] = {"version": NGC_TORCH}
    f.raw.setdefault("dists", {})["torch"] = "2.9.1"
    assert one(g9_live.live(f), "torch").status is Status.PASS


def test_triton_ptxas_variable_when_g7_did_not_judge_it():
    gb10 = sf.live_raw("gb10", env={"NVIDIA_PYTORCH_VERSION": "25.10"})
    f = one(g9_live.live(gb10), "TRITON_PTXAS_PATH")
    assert f.status is Status.WARN
    assert f.summary == (
        "Triton is installed and TRITON_PTXAS_PATH is unset: its bundled ptxas may predate CUDA 13 and "
        "reject sm_121a"
    )
    assert f.fix == "export TRITON_PTXAS_PATH=/usr/local/cuda/bin/ptxas (NGC images set it)"
    h200 = sf.live_raw("h200-static", env={})
    h200.raw.setdefault("dists", {})["triton"] = "3.6.0"
    assert one(g9_live.live(h200), "TRITON_PTXAS_PATH").status is Status.INFO
    set_ = one(g9_live.live(sf.live_raw("gb10")), "TRITON_PTXAS_PATH")
    assert (set_.status, set_.summary) == (Status.PASS, "TRITON_PTXAS_PATH=/usr/local/cuda/bin/ptxas")
    judged = sf.live_raw("gb10", env={}, kernel_coverage={"packages": None, "triton": {"name": "triton"}})
    assert not [x for x in g9_live.live(judged) if x.subject == "TRITON_PTXAS_PATH"]


def test_every_container_marker_is_named():
    two = ["/.dockerenv exists", "/proc/1/cgroup names docker"]
    f = one(g9_live.live(sf.live_raw("h200-static", container__markers=two)), "container")
    assert f.summary == "inside a container (/.dockerenv exists; /proc/1/cgroup names docker)"
    assert f.evidence == tuple(two)


def test_ngc_image_known_by_its_constraint_file_alone():
    """The container probe found NGC's constraint file but the environment has no NVIDIA_PYTORCH_VERSION
    (a derived image that dropped it): the image is still NGC's and its torch pin is named."""
    f = sf.live_raw(
        "h200-static",
        env={},
        container__ngc={"constraint_file": "/etc/pip/constraint.txt", "pins": {"torch": NGC_TORCH}},
    )
    f.raw["dists"]["torch"] = "2.9.1"
    r = one(g9_live.live(f), "torch")
    assert r.status is Status.FAIL
    assert r.summary == "NGC image detected but torch 2.9.1 is not NGC's build: a pip install replaced it"
    assert r.evidence == ("/etc/pip/constraint.txt present", f"the image pinned torch=={NGC_TORCH}")
    assert r.fix == (
        "rebuild from the image and install other packages with --no-deps, or keep "
        "PIP_CONSTRAINT=/etc/pip/constraint.txt in effect"
    )


def _data_age(f):
    return [x for x in g9_live.live(f) if x.subject.startswith("NGC ")]


def test_an_image_newer_than_the_data_by_its_variable_or_its_torch():
    by_variable = _ngc("2.9.1")
    by_variable.raw["env"]["NVIDIA_PYTORCH_VERSION"] = "99.01"
    [f] = _data_age(by_variable)
    assert (f.status, f.subject) == (Status.INFO, "NGC 99.01")
    assert f.summary.startswith("this machine's image: ") and "99.01" in f.summary
    assert f.fix and f.fix.startswith("sparkenv profiles new ngc-99.01")
    by_torch = sf.live_raw("h200-static", env={})
    by_torch.raw["dists"]["torch"] = NGC_TORCH.replace("nv25.11", "nv99.01")
    [f] = _data_age(by_torch)
    assert f.subject == "NGC 99.01" and f.summary.startswith("this machine's image: ")
    assert _data_age(_ngc(NGC_TORCH)) == []  # 25.11 is known


def test_triton_ptxas_variable_only_where_a_triton_is_installed():
    """Either name of Triton (PyPI's triton, NGC's pytorch-triton), or both, asks for the variable; a machine
    with neither gets no line about it."""
    none = sf.live_raw("h200-static", env={})
    del none.raw["dists"]["triton"]
    assert not [x for x in g9_live.live(none) if x.subject == "TRITON_PTXAS_PATH"]
    both = sf.live_raw("h200-static", env={})
    both.raw["dists"]["pytorch-triton"] = "3.5.0+gitde3506d2"  # ngc-25.11's, beside PyPI's triton
    f = one(g9_live.live(both), "TRITON_PTXAS_PATH")
    assert f.status is Status.INFO  # not a GB10: sm_121a is not this machine's target
    assert f.fix == "export TRITON_PTXAS_PATH=/usr/local/cuda/bin/ptxas (NGC images set it)"
