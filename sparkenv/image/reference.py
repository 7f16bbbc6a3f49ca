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

from sparkenv.errors import SparkenvError

_ALNUM = r"[a-z0-9]+"
_SEPARATOR = r"(?:[_.]|__|[-]+)"
_PATH_COMPONENT = rf"{_ALNUM}(?:{_SEPARATOR}{_ALNUM})*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_HOST = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])"
_DOMAIN = rf"{_HOST}(?::[0-9]+)?"
_NAME = rf"(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
_TAG = r"[\w][\w.-]{0,127}"
_REFERENCE = re.compile(rf"(?P<name>{_NAME})(?::(?P<tag>{_TAG}))?", re.ASCII)
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
    if len(m.group("name")) > NAME_MAX:
        raise SparkenvError(
            f"{option}: the repository name is {len(m.group('name'))} characters, over {NAME_MAX}"
        )
    return ref
