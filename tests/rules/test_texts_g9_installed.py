"""rules/g9_installed.py (G9 at audit): the words each verdict gives and the edges where they change — NGC's
torch kept (its version `2.10.0a0+b558c986e8.nv25.11` from data/profiles/ngc-25.11.toml, as the image pins
it in /etc/pip/constraint.txt) or replaced, a package off the image's pins, drift against a lock (pinned,
listed without a pin, left to the base, not in it), and the requirements pip check checks. Each row is a
real environment (dist-info written the way a wheel installer leaves it) under a root holding the image's
files, read by audit/scan.py."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import stage_facts as sf

from sparkenv.core.report import GotchaId, Status
from sparkenv.environment import profiles
from sparkenv.facts.lock import ProfileOfLock
from sparkenv.rules import g9_installed

NGC_TORCH = profiles.load("ngc-25.11").provides["torch"]
IMAGE = profiles.load("ngc-25.11").image
SHIPPED_LOCK = str(Path(__file__).resolve().parents[2] / "lockfiles" / "pylock.ngc-25-11.toml")
REPLACED_FIX = (
    "rebuild from the image and install other packages with --no-deps, or keep "
    "PIP_CONSTRAINT=/etc/pip/constraint.txt in effect"
)


def audit(ctx, *dists, constraint=None, marker=None, lock=None, environ=None):
    for name, version, *requires in dists:
        ctx.env().add(name, version, requires=requires[0] if requires else ())
    if marker:
        (ctx.root / marker).write_text("")
    if constraint is not None:
        (ctx.root / "etc" / "pip").mkdir(parents=True)
        (ctx.root / "etc" / "pip" / "constraint.txt").write_text(constraint)
    found = g9_installed.installed(sf.installed(ctx, lock=lock, environ=environ))
    assert all(f.id is GotchaId.G9 for f in found)
    return found


def one(found, subject):
    mine = [f for f in found if f.subject == subject]
    assert len(mine) == 1, found
    return mine[0]


def lockfile(ctx, text: str) -> str:
    return str(ctx.file("requirements.lock.txt", text))


# --- the container and the NGC image -------------------------------------------------------------------


def test_container_marker_is_named(ctx):
    inside = one(audit(ctx, marker=".dockerenv"), "container")
    assert inside.status is Status.PASS and inside.summary.startswith("inside a container (")
    assert inside.evidence and all(m in inside.summary for m in inside.evidence)


def test_no_container_marker_gives_the_fix_for_bare_pip(ctx):
    bare = one(audit(ctx), "container")
    assert bare.summary == (
        "no container marker found: if this is a bare pip environment, torch, triton, xformers and "
        "transformers drift independently"
    )
    assert bare.evidence and all(e.startswith("checked ") for e in bare.evidence)
    assert (
        bare.fix
        == g9_installed.NO_CONTAINER_FIX
        == (
            "run inside an NGC PyTorch container (sparkenv build makes one); if bare pip is unavoidable, pin "
            "with a lock and install the Unsloth family with --no-deps"
        )
    )


def test_ngc_torch_kept(ctx):
    found = audit(ctx, ("torch", NGC_TORCH), constraint=f"torch=={NGC_TORCH}\n")
    f = one(found, "torch")
    assert f.status is Status.PASS
    assert f.summary.startswith(f"torch {NGC_TORCH} is the NGC image")
    assert any(e.endswith("constraint.txt present") for e in f.evidence)


def test_ngc_torch_replaced_names_the_pin(ctx):
    found = audit(ctx, ("torch", "2.9.1"), constraint=f"torch=={NGC_TORCH}\n")
    f = one(found, "torch")
    assert f.status is Status.FAIL and f.fix == REPLACED_FIX
    assert f.summary.endswith("detected but torch 2.9.1 is not NGC's build: a pip install replaced it")
    assert f.evidence[-1] == f"the image pinned torch=={NGC_TORCH}"


def test_ngc_image_without_torch(ctx):
    f = one(audit(ctx, ("numpy", "1.26.4"), constraint="numpy==1.26.4\n"), "torch")
    assert f.status is Status.FAIL
    assert f.summary.endswith("detected but torch is not installed in the target")
    assert f.fix == "audit the image's own environment, or rebuild from the image"


def test_packages_off_the_images_pins(ctx):
    pins = f"torch=={NGC_TORCH}\nnumpy==1.26.4\nscipy==1.14.1\npillow==11.0.0\n"
    found = audit(ctx, ("torch", NGC_TORCH), ("numpy", "2.3.0"), ("scipy", "1.14.1"), constraint=pins)
    f = one(found, "numpy")
    assert f.status is Status.WARN
    assert f.summary.startswith("numpy 2.3.0 replaced the image's numpy==1.26.4 (")
    assert f.summary.endswith("constraint.txt)")
    assert f.fix == "pip install --no-deps 'numpy==1.26.4', or rebuild from the image"
    assert not [x for x in found if x.subject in ("scipy", "pillow")]  # as pinned; not installed
    assert one(found, "torch").status is Status.PASS


def test_no_ngc_image_says_nothing_of_torch(ctx):
    assert not [f for f in audit(ctx, ("numpy", "2.3.0")) if f.subject in ("torch", "numpy")]


# --- drift against a lock -------------------------------------------------------------------------------


def test_no_lock_lists_what_was_not_compared(ctx):
    f = one(audit(ctx, ("transformers", "4.56.2"), ("xformers", "0.0.33"), ("peft", "0.19.1")), "lock")
    assert (f.status, f.summary) == (
        Status.INFO,
        "no --lock given: xformers 0.0.33, transformers 4.56.2 not compared with a lock",
    )


def test_no_lock_and_nothing_drift_prone_says_nothing(ctx):
    assert not [x for x in audit(ctx, ("peft", "0.19.1")) if x.subject == "lock"]


def test_lock_that_lists_without_a_pin_or_not_at_all(ctx):
    lock = lockfile(ctx, "transformers>=4.50\npeft==0.19.1\n")
    found = audit(ctx, ("transformers", "4.56.2"), ("xformers", "0.0.33"), lock=lock)
    loose = one(found, "transformers")
    assert loose.status is Status.WARN
    assert loose.summary == f"transformers 4.56.2: {lock} lists it without an exact pin"
    assert loose.fix == "pin transformers==4.56.2 exactly"
    assert loose.evidence == (f"lock {lock}",)
    absent = one(found, "xformers")
    assert absent.summary == f"xformers 0.0.33 is installed but not pinned in {lock}"
    assert absent.fix == "pin xformers==0.0.33 in the lock (sparkenv lock)"


def test_drifted_and_matching_pins(ctx):
    lock = lockfile(ctx, "transformers==4.57.0\nxformers==0.0.33\n")
    found = audit(ctx, ("transformers", "4.56.2"), ("xformers", "0.0.33"), lock=lock)
    drift = one(found, "transformers")
    assert drift.summary == f"transformers drifted: {lock} pins 4.57.0, 4.56.2 is installed"
    assert drift.fix == "pip install --no-deps 'transformers==4.57.0', or re-lock"
    same = one(found, "xformers")
    assert (same.status, same.summary, same.fix) == (Status.PASS, f"xformers 0.0.33 matches {lock}", None)


def test_ngc_torch_not_in_a_plain_lock_is_the_bases(ctx):
    """The NGC version string itself says whose build it is, with no constraint file to read."""
    lock = lockfile(ctx, "peft==0.19.1\n")
    f = one(audit(ctx, ("torch", NGC_TORCH), lock=lock), "torch")
    assert (f.status, f.summary) == (
        Status.PASS,
        f"torch {NGC_TORCH} is provided by the NGC base, not the lock",
    )
    pinned = one(audit(ctx, ("triton", "3.5.0"), constraint="triton==3.5.0\n", lock=lock), "triton")
    assert pinned.status is Status.PASS and pinned.summary.endswith(
        "is provided by the NGC base, not the lock"
    )


def test_lock_leaves_torch_to_the_base(ctx):
    f = one(audit(ctx, ("torch", "2.9.1"), lock=SHIPPED_LOCK), "torch")
    assert f.status is Status.WARN
    assert (
        f.summary == f"torch 2.9.1 is not the base's build: {SHIPPED_LOCK} leaves torch to {IMAGE} on purpose"
    )
    assert f.evidence == (f"{SHIPPED_LOCK}: [tool.sparkenv] excluded lists torch",)
    assert f.fix == (
        f"rebuild from {IMAGE} (sparkenv build) and do not install torch with pip; the lock keeps it out on "
        "purpose"
    )
    kept = one(audit(ctx, ("torch", NGC_TORCH), lock=SHIPPED_LOCK), "torch")
    assert (kept.status, kept.evidence) == (Status.PASS, (SHIPPED_LOCK,))
    assert kept.summary == f"torch {NGC_TORCH} is the base's, as {SHIPPED_LOCK} intends"


def test_lock_profile_found_changed_or_missing(ctx):
    """What audit/scan.py found of --lock's profile (lock/profile.py's lookup, tested there)."""
    facts = sf.installed(ctx, lock=SHIPPED_LOCK)
    assert facts.lock_profile is None or facts.lock_profile.found

    def said(**p):
        got = g9_installed.installed(dataclasses.replace(facts, lock_profile=ProfileOfLock("p.toml", **p)))
        return one(got, "profile")

    same = said(profile="ngc-25.11", found=True)
    assert (same.status, same.summary) == (
        Status.PASS,
        "p.toml was locked for profile ngc-25.11, unchanged since",
    )
    changed = said(profile="ngc-25.11", found=True, changed=True)
    assert changed.status is Status.WARN
    assert changed.summary == (
        "profile ngc-25.11 changed since p.toml was written: the lock was resolved for what it said then"
    )
    assert changed.evidence == ("p.toml: [tool.sparkenv] profile-hash",)
    assert changed.fix == (
        "re-lock for the profile as it is now (sparkenv lock INPUT… --profile ngc-25.11; sparkenv lock "
        "--check prints the exact command), then rebuild or reinstall"
    )
    gone = said(profile="profiles/mine.toml", found=False, why="no such file")
    assert (gone.status, gone.summary) == (
        Status.INFO,
        "p.toml was locked for profile profiles/mine.toml, which is not here: not compared (no such file)",
    )


# --- requirements, as pip check checks them -------------------------------------------------------------


def test_requirement_installed_at_another_version(ctx):
    f = one(audit(ctx, ("peft", "0.19.1", ["accelerate>=1"]), ("accelerate", "0.9.0")), "peft:accelerate")
    assert f.status is Status.WARN
    assert f.summary == "peft 0.19.1 requires accelerate>=1, but accelerate 0.9.0 is installed"
    assert f.evidence == ("Requires-Dist: accelerate>=1", "installed: accelerate 0.9.0")
    assert f.fix == "pip install 'accelerate>=1', or a peft version that accepts accelerate 0.9.0"


def test_requirement_on_what_the_ngc_image_pins_keeps_the_pin(ctx):
    f = one(
        audit(ctx, ("peft", "0.19.1", ["numpy>=2"]), ("numpy", "1.26.4"), constraint="numpy==1.26.4\n"),
        "peft:numpy",
    )
    assert f.fix == (
        "keep numpy 1.26.4 (the NGC base pins it in /etc/pip/constraint.txt); install a peft version that "
        "accepts it, or --no-deps if peft runs with it"
    )


def test_missing_requirement_names_the_uninstall(ctx):
    f = one(audit(ctx, ("peft", "0.19.1", ["accelerate>=1"])), "peft:accelerate")
    assert f.summary == "peft 0.19.1 requires accelerate>=1, which is not installed"
    assert f.evidence == ("Requires-Dist: accelerate>=1",)
    assert f.fix == "pip install 'accelerate>=1' (or uninstall peft if nothing uses it)"


def test_requirements_met_counts_what_was_checked(ctx):
    found = audit(
        ctx,
        ("peft", "0.19.1", ["accelerate>=1", "pywin32; sys_platform == 'win32'"]),
        ("accelerate", "1.15.0"),
    )
    f = one(found, "requirements")
    assert f.status is Status.PASS
    assert f.summary == (
        "requirements met: 1 requirement(s) of 2 distributions, markers for x86_64 Python 3.12 (what pip "
        "check checks, plus the extras asked for)"
    )
    assert not [x for x in audit(ctx, ("peft", "0.19.1", ["accelerate>=2"])) if x.subject == "requirements"]


def test_unparsable_requirement_is_said_not_checked(ctx):
    found = audit(ctx, ("peft", "0.19.1", ["accelerate>=>1"]))
    f = one(found, "peft")
    assert f.status is Status.WARN
    assert f.summary.startswith("peft: Requires-Dist 'accelerate>=>1' cannot be parsed (")
    assert f.summary.endswith("); not checked")
    assert f.evidence[0].endswith("peft-0.19.1.dist-info/METADATA")


def test_lock_leaves_triton_to_the_base_as_the_image_pins_it(ctx):
    """NGC's Triton carries no .nvYY.MM label: the image's constraint pin is what says it is the base's."""
    triton = profiles.load("ngc-25.11").provides["pytorch-triton"]  # 3.5.0+gitde3506d2
    pins = f"pytorch-triton=={triton}\n"
    kept = one(audit(ctx, ("pytorch-triton", triton), constraint=pins, lock=SHIPPED_LOCK), "pytorch-triton")
    assert (kept.status, kept.evidence) == (Status.PASS, (SHIPPED_LOCK,))
    assert kept.summary == f"pytorch-triton {triton} is the base's, as {SHIPPED_LOCK} intends"


def _data_age(found):
    return [f for f in found if f.subject.startswith("NGC ")]


def test_an_environment_newer_than_the_data_by_its_torch(ctx):
    """An image of a release sparkenv's dated data does not know yet (99.01, read from torch's .nv label
    under --root, where no NVIDIA_PYTORCH_VERSION is seen) is said, with the refresh."""
    [f] = _data_age(audit(ctx, ("torch", NGC_TORCH.replace("nv25.11", "nv99.01"))))
    assert (f.status, f.subject, f.evidence[0]) == (Status.INFO, "NGC 99.01", "NGC release 99.01")
    assert f.summary.startswith("this environment: ") and "99.01" in f.summary
    assert f.fix and f.fix.startswith("sparkenv profiles new ngc-99.01")


def test_a_known_release_says_nothing_of_the_data(ctx):
    assert _data_age(audit(ctx, ("torch", NGC_TORCH), constraint=f"torch=={NGC_TORCH}\n")) == []


def test_requirements_met_without_a_known_python_version(ctx):
    """A target whose Python version neither its site-packages path nor an interpreter tells (target.py
    leaves it None): the summary says '?' rather than a version it does not know."""
    ctx.env().add("peft", "0.19.1", requires=["accelerate>=1"])
    ctx.env().add("accelerate", "1.15.0")
    facts = sf.installed(ctx)
    facts = dataclasses.replace(facts, target=dataclasses.replace(facts.target, python_version=None))
    f = one(g9_installed.installed(facts), "requirements")
    assert f.summary == (
        "requirements met: 1 requirement(s) of 2 distributions, markers for x86_64 Python ? (what pip "
        "check checks, plus the extras asked for)"
    )


def test_every_package_off_the_images_pins_is_named(ctx):
    """Pins are walked in name order: one installed as pinned does not end the walk before one that is not."""
    pins = f"accelerate==1.10.0\nnumpy==1.26.4\ntorch=={NGC_TORCH}\n"
    found = audit(ctx, ("accelerate", "1.10.0"), ("numpy", "2.3.0"), ("torch", NGC_TORCH), constraint=pins)
    assert not [x for x in found if x.subject == "accelerate"]
    f = one(found, "numpy")
    assert (
        f.status is Status.WARN
        and f.fix == "pip install --no-deps 'numpy==1.26.4', or rebuild from the image"
    )
