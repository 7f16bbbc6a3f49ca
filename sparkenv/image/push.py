"""`sparkenv build --push REGISTRY/NAME:TAG`: push the audited image and return the digest the registry
gave it, so every node can `docker pull REGISTRY/NAME@sha256:…` the very same image (and the gate's
cross-node agreement can compare it, passed as $SPARKENV_IMAGE)."""

from __future__ import annotations

import re
import sys
from typing import Any, NoReturn, TextIO

from sparkenv.core.errors import ServiceMissing, SparkenvError
from sparkenv.image import engine

_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_AUTH = re.compile(r"unauthorized|authentication required|denied|no basic auth", re.I)


class PushFailed(SparkenvError):
    """The registry refused the image (a layer, the manifest): exit 1."""

    exit_code = 1


def split(ref: str) -> tuple[str, str]:
    """'127.0.0.1:5000/team/train:1' -> ('127.0.0.1:5000/team/train', '1'); no tag -> 'latest'."""
    repo, _, tag = ref.rpartition(":")
    if not repo or "/" in tag:
        return ref, "latest"
    return repo, tag


def registry_of(repo: str) -> str:
    first = repo.split("/", 1)[0]
    return first if "/" in repo and ("." in first or ":" in first or first == "localhost") else "docker.io"


def push(client: Any, ref: str, quiet: bool, out: TextIO = sys.stderr) -> str:
    """Push the local tag `ref`; return the manifest digest. ServiceMissing (exit 3) when the registry
    cannot be reached or wants a login; PushFailed when it refuses the upload. The engine's own errors
    go through engine.talking, as every call to it."""

    repo, tag = split(ref)
    registry = registry_of(repo)
    layers: set[str] = set()
    pushed: set[str] = set()
    digest = None

    def refused(line: str) -> NoReturn:
        _raise(line, registry, ref)

    with engine.talking(f"the push of {ref}", refused=refused):
        for chunk in client.api.push(repo, tag=tag, stream=True, decode=True):
            if "error" in chunk:
                _raise(str(chunk.get("error")), registry, ref)
            status = str(chunk.get("status", ""))
            if chunk.get("id") and status in ("Preparing", "Waiting", "Layer already exists", "Pushed"):
                layers.add(chunk["id"])
            if status in ("Pushed", "Layer already exists"):
                pushed.add(chunk["id"])
                if not quiet:
                    out.write(
                        f"    push: {len(pushed)}/{len(layers)} layers ({status.lower()} {chunk['id']})\n"
                    )
                    out.flush()
            aux = chunk.get("aux") or {}
            if isinstance(aux, dict) and _DIGEST.fullmatch(str(aux.get("Digest", ""))):
                digest = aux["Digest"]
    if digest is None:
        raise PushFailed(f"the registry {registry} gave no digest for {ref}: the push did not complete")
    return str(digest)


def _raise(text: str, registry: str, ref: str) -> NoReturn:
    line = text.strip().splitlines()[0] if text.strip() else "no reason given"
    if _AUTH.search(line):
        raise ServiceMissing(f"{registry} wants a login to push {ref}: docker login {registry} ({line})")
    if re.search(
        r"connection refused|no such host|dial tcp|i/o timeout|server gave HTTP response|EOF", line, re.I
    ):
        raise ServiceMissing(
            f"cannot reach the registry {registry} to push {ref} ({line}); start one on this machine "
            "with `docker-registry serve CONFIG` (Debian's docker-registry) or "
            "`docker run -d -p 5000:5000 registry:2`"
        )
    raise PushFailed(f"pushing {ref} to {registry} failed: {line}")
