"""Exact-pin extraction: the one version a requirement, a constraint line or a lock entry allows."""

from __future__ import annotations

from collections.abc import Iterable


def exact_pin(specifiers: Iterable[object]) -> str | None:
    """The version of the first `==` (without a wildcard) or `===` clause, else None.

    `specifiers` are packaging Specifier objects (a SpecifierSet iterates as them); `==2.9.*` is a range,
    not a pin.
    """
    for spec in specifiers:
        operator, version = getattr(spec, "operator", None), getattr(spec, "version", "")
        if operator == "===" or (operator == "==" and not version.endswith(".*")):
            return version
    return None
