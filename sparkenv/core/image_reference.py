"""Is `--tag` a name Docker accepts? Checked before anything is built, `--dry-run` included.

The grammar is Docker's image reference grammar, distribution/reference (reference.go, v0.5.0:
https://github.com/distribution/reference/blob/v0.5.0/reference.go#L1-L25):

    reference       := name [ ":" tag ]          (a digest cannot be a tag's target, so none here)
    name            := [domain '/'] remote-name
    domain          := host [':' port-number]
    domain-component:= /([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])/
    path-component  := alpha-numeric [separator alpha-numeric]*
    alpha-numeric   := /[a-z0-9]+/
    separator       := /[_.]|__|[-]*/
    tag             := /[\\w][\\w.-]{0,127}/

and a name is at most 255 characters. Without this check `build --tag 'Bad Tag!!'` built and audited the
whole image, then failed at tagging.
"""

from __future__ import annotations

import re

from sparkenv.core.errors import SparkenvError
from sparkenv.core.printable import printable

_ALNUM = r"[a-z0-9]+"
_SEPARATOR = r"(?:[_.]|__|[-]+)"
_PATH_COMPONENT = rf"{_ALNUM}(?:{_SEPARATOR}{_ALNUM})*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
# The first part is a registry only with a dot, a port or as localhost (distribution/reference's
# normalize.go, splitDockerDomain): `UPPER/img` is not a registry named UPPER but a repository Docker
# refuses, which the grammar alone accepted (`--tag UPPER/case` built, then failed at tagging).
_DOMAIN = (
    rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})+(?::[0-9]+)?|{_DOMAIN_COMPONENT}:[0-9]+"
    r"|localhost|\[[a-fA-F0-9:]+\](?::[0-9]+)?)"
)
_NAME = rf"(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
_TAG = r"[\w][\w.-]{0,127}"
# digest := algorithm ":" encoded; the registered algorithms' encodings (OCI image-spec descriptor.md)
_DIGEST = r"sha256:[a-f0-9]{64}|sha512:[a-f0-9]{128}"
_REFERENCE = re.compile(rf"(?P<name>{_NAME})(?::(?P<tag>{_TAG}))?", re.ASCII)
_PULLABLE = re.compile(rf"(?P<name>{_NAME})(?::(?P<tag>{_TAG}))?(?:@(?P<digest>{_DIGEST}))?", re.ASCII)
DIGEST = re.compile(_DIGEST, re.ASCII)
NAME_MAX = 255


def check_tag(ref: str, option: str = "--tag") -> str:
    """`ref` when Docker can tag an image with it; else SparkenvError (exit 2) saying what is wrong."""
    m = _REFERENCE.fullmatch(ref)
    if m is None:
        hint = ""
        if ref != ref.lower() and _REFERENCE.fullmatch(ref.lower()):
            hint = f"; repository names are lower case: {ref.lower()}"
        elif "@" in ref:
            hint = "; a digest (@sha256:…) names an image, it cannot be a tag"
        raise SparkenvError(
            f"{option} {ref!r}: not a valid Docker image reference (NAME[:TAG], NAME lower-case letters, "
            f"digits and . _ - separators with / between parts; TAG up to 128 of [A-Za-z0-9_.-]){hint}"
        )
    _name_length(m, option)
    return ref


def _name_length(m: re.Match[str], option: str) -> None:
    if len(m.group("name")) > NAME_MAX:
        raise SparkenvError(
            f"{option}: the repository name is {len(m.group('name'))} characters, over {NAME_MAX}"
        )


def check_image(ref: str, where: str) -> str:
    """`ref` when it names an image Docker can pull or find (NAME[:TAG][@DIGEST]); else SparkenvError
    (exit 2) naming `where` (--base, or a profile file's `image`). Checked before the reference goes
    into a Dockerfile's FROM line (a newline there added a RUN line) or to the Docker API."""
    m = _PULLABLE.fullmatch(ref)
    if m is None:
        hint = ""
        if not ref:
            hint = "; it is empty"
        elif any(c.isspace() for c in ref):
            hint = "; it holds whitespace or a line break"
        elif "@" in ref and not re.search(rf"@(?:{_DIGEST})$", ref):
            hint = "; a digest is @sha256: and 64 lower-case hex digits"
        elif ref != ref.lower() and _PULLABLE.fullmatch(ref.lower()):
            hint = "; repository names are lower case"
        elif ref.startswith("-"):
            hint = "; it starts with a dash"
        raise SparkenvError(
            f"{where} {printable(ref)[:300]!r}: not a valid Docker image reference "
            "(NAME[:TAG][@sha256:DIGEST], NAME lower-case letters, digits and . _ - separators with / "
            f"between parts){hint}"
        )
    _name_length(m, where)
    return ref


def check_digest(digest: str, where: str) -> str:
    """An image digest (sha256:64 hex), or "" (none recorded); else SparkenvError naming `where`."""
    if digest and not DIGEST.fullmatch(digest):
        raise SparkenvError(
            f"{where} {printable(digest)[:200]!r}: not an image digest (sha256: and 64 lower-case hex digits)"
        )
    return digest
