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


def pinned_clause(specifier: str) -> str | None:
    """The version the first `===`, `==` or `~=` clause of a specifier string names, a wildcard kept
    (`==13.*` -> "13.*", `~=13.0` -> "13.0"): for a reader that needs only its leading release number,
    such as the CUDA major of a versioned CUDA wheel; `exact_pin` is the one for an exact version."""
    for clause in specifier.split(","):
        clause = clause.strip()
        for op in ("===", "==", "~="):
            if clause.startswith(op):
                return clause[len(op) :].strip()
    return None
