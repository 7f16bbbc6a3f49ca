"""G9: container or not, and inside an NGC image, whether pip replaced what the image provides (pure)."""

from __future__ import annotations

from sparkenv.audit.scan import AuditFacts
from sparkenv.cuda import rules
from sparkenv.report import Finding, Status


def check(facts: AuditFacts) -> list[Finding]:
    return [_container(facts), *_ngc(facts)]


def _container(facts: AuditFacts) -> Finding:
    c = facts.container
    if c.inside:
        return Finding(
            "G9", Status.PASS, f"inside a container ({'; '.join(c.markers)})", "container", c.markers
        )
    return Finding(
        "G9",
        Status.WARN,
        "no container marker found: if this is a bare pip environment, torch, triton, xformers and "
        "transformers drift independently",
        "container",
        tuple(f"checked {p}" for p in c.checked),
        "run inside an NGC PyTorch container (sparkenv build makes one); if bare pip is unavoidable, pin "
        "with a lock and install the Unsloth family with --no-deps",
    )


def _ngc(facts: AuditFacts) -> list[Finding]:
    n = facts.ngc
    if not n.detected:
        return []
    out: list[Finding] = []
    markers = tuple(n.markers())
    image = f"NGC image {n.release}" if n.release else "NGC image"
    torch = facts.dists.get("torch")
    if torch is None:
        out.append(
            Finding(
                "G9",
                Status.FAIL,
                f"{image} detected but torch is not installed in the target",
                "torch",
                markers,
                "audit the image's own environment, or rebuild from the image",
            )
        )
    elif not rules.ngc_release(torch.dist.version):
        pinned = n.pins.get("torch")
        out.append(
            Finding(
                "G9",
                Status.FAIL,
                f"{image} detected but torch {torch.dist.version} is not NGC's build: "
                "a pip install replaced it",
                "torch",
                (*markers, *([f"the image pinned torch=={pinned}"] if pinned else [])),
                "rebuild from the image and install other packages with --no-deps, or keep "
                "PIP_CONSTRAINT=/etc/pip/constraint.txt in effect",
            )
        )
    else:
        out.append(
            Finding("G9", Status.PASS, f"torch {torch.dist.version} is the {image} build", "torch", markers)
        )
    for key, pinned in sorted(n.pins.items()):
        df = facts.dists.get(key)
        if key == "torch" or df is None or df.dist.version == pinned:
            continue
        out.append(
            Finding(
                "G9",
                Status.WARN,
                f"{key} {df.dist.version} replaced the image's {key}=={pinned} ({n.constraint_file})",
                key,
                markers,
                f"pip install --no-deps '{key}=={pinned}', or rebuild from the image",
            )
        )
    return out
