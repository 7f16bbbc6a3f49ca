"""G9 — drift: a bare pip environment, a pip install that replaced the base's torch, packages moved off the
image's pins or the lock. Every stage's judgement; `RULES` at the end lists which function judges what.

declared and resolved (check, lock): base pins replaced, drift-prone packages not pinned exactly, --no-deps
stages; lockfile (lock, lock --check): may the lock be written, is it stale; image (build): the base's
packages untouched; installed (audit, build's self-audit): container markers, NGC torch replaced, the
constraint file, drift against --lock, unmet requirements; live (gate): the same markers and NGC torch.
"""

from __future__ import annotations

from sparkenv.rules import Lazy, Rule, Stage

RULES = (
    Rule(
        Stage.HOST,
        Lazy("host_docker", "g9"),
        "the Docker socket, its group and mode and this user's right to it; the Engine API's /_ping and "
        "/info within a timeout; the engine's runtimes (nvidia) and the CDI specs in /etc/cdi, "
        "/var/run/cdi and the engine's CDI folders (kind nvidia.com/gpu, the devices they name); with "
        "--image, one container of it asked for every GPU (as docker run --gpus all) running nvidia-smi "
        "-L within --timeout, removed afterwards; free space where the engine keeps images",
    ),
    Rule(
        Stage.DECLARED,
        Lazy("g9_declared", "declared"),
        "pins on what the profile's base provides, drift-prone packages (torch, triton, xformers, "
        "transformers) pinned exactly or not, the Unsloth family in a --no-deps stage or not; the "
        "profile's UNVERIFIED values and an NGC release newer than the data knows (INFO, rules/data_age.py)",
    ),
    Rule(
        Stage.RESOLVED,
        Lazy("g9_resolved", "resolved"),
        "resolved packages the base provides, drift-prone packages pinned in the lock; every "
        "Requires-Dist in the resolved graph (markers for the target, extras followed) against the base's "
        "exact versions and the locked ones (a closed lock); declared requirements not pinned exactly and "
        "sdist-only picks against the newest release on the index (fallbacks); a requirement with no "
        "release in the range asked, requirements that conflict, a name the index lacks or refuses",
    ),
    Rule(
        Stage.LOCKFILE,
        Lazy("g9_lock_and_image", "lockfile"),
        "the findings of the declared and resolved rules (the lock is written only when none fails and "
        "every file's metadata was read); under --check, each written lock's recorded input and profile "
        "hashes, format and hashed requirements file against the inputs and profile as they are now",
    ),
    Rule(
        Stage.IMAGE,
        Lazy("g9_lock_and_image", "image"),
        "every distribution of the base before and after the lock's install steps, read inside the "
        "image (base_check.py): a package the profile says the base provides replaced or removed",
    ),
    Rule(
        Stage.INSTALLED,
        Lazy("g9_installed", "installed"),
        "container markers, $NVIDIA_PYTORCH_VERSION and /etc/pip/constraint.txt against the installed "
        "torch and the image's pins, drift-prone packages against --lock, every distribution's "
        "Requires-Dist against what is installed (pip check, plus the extras asked for)",
    ),
    Rule(
        Stage.LIVE,
        Lazy("g9_live", "live"),
        "container markers, $NVIDIA_PYTORCH_VERSION and /etc/pip/constraint.txt against the running "
        "torch, TRITON_PTXAS_PATH next to Triton",
    ),
)
