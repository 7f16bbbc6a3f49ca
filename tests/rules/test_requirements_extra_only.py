"""The requirement check skips, unparsed, a Requires-Dist whose only marker is `extra == "..."` when the
distribution is checked without extras: that shortcut must never hide an unparseable requirement nor
skip one that holds. Checked against packaging itself on every Requires-Dist of the real environments
at hand, and on the spellings where the grammar is strict."""

from __future__ import annotations

import sys
import sysconfig
from pathlib import Path

import pytest
from packaging.requirements import InvalidRequirement, Requirement

from sparkenv.environment import markers
from sparkenv.environment.distributions import Distribution, iter_distributions
from sparkenv.rules import requirements

ENV = markers.marker_environment("x86_64", "3.12.3")


def real_requires() -> list[str]:
    """Every Requires-Dist of this interpreter's site-packages (pytest, hypothesis, typer, docker … and
    their extras)."""
    site = Path(sysconfig.get_paths()["purelib"])
    out = []
    for dist in iter_distributions(site, read_files=False):
        if isinstance(dist, Distribution):
            out.extend(dist.requires)
    return out


def holds_without_extras(text: str) -> bool | None:
    """packaging's answer: None when it cannot parse `text`, else whether it holds with no extra."""
    try:
        req = Requirement(text)
    except InvalidRequirement:
        return None
    return markers.applies(req.marker, ENV, ("",))


TRICKY = [
    'pytest>=7; extra == "test"',
    "foo[bar, baz] >= 1.0 , < 2 ; extra=='x'",
    'foo ~= 1.4.2; extra == "x"',
    'foo != 1.*; extra == "x"',
    'foo ~= 1 ; extra == "x"',  # invalid: ~= needs two release parts
    'foo >= 1.*; extra == "x"',  # invalid: a wildcard only with == and !=
    'foo === 1; extra == "x"',
    'foo >=1,; extra == "x"',  # a trailing comma: packaging takes it, the shortcut leaves it to it
    'foo-; extra == "x"',  # invalid name
    'foo; extra == "x" or python_version < "3"',  # holds without extras on 3.12? no, but not extra-only
    'foo; "x" == extra',
    "foo; extra == 'x\"",  # mismatched quotes: invalid
    'foo (>=1); extra == "x"',
    'foo @ https://example.invalid/foo.whl ; extra == "x"',
    'foo; extra == ""',
]


@pytest.mark.parametrize("text", TRICKY + real_requires())
def test_a_skipped_requirement_is_valid_and_needs_an_extra(text):
    if requirements.extra_only(text):
        assert holds_without_extras(text) is False, text


def test_the_shortcut_applies_to_the_common_spellings():
    assert requirements.extra_only('pytest>=7; extra == "test"')
    assert requirements.extra_only("foo[bar, baz] >= 1.0 , < 2 ; extra=='x'")
    assert requirements.extra_only('foo ~= 1.4.2; extra == "x"')
    assert sum(map(requirements.extra_only, real_requires())) > 10
    for invalid in ('foo ~= 1 ; extra == "x"', 'foo >= 1.*; extra == "x"'):
        assert not requirements.extra_only(invalid)
        assert holds_without_extras(invalid) is None  # packaging rejects it: reported as unparsed


def test_the_check_finds_the_same_with_and_without_the_shortcut(monkeypatch, tmp_path):
    """The real environment this suite runs in, checked with the shortcut and with every requirement
    parsed: the same broken, unparsed and counted requirements."""
    from sparkenv.audit import scan
    from sparkenv.environment import target

    resolved = target.resolve(str(Path(sys.executable).parent.parent))
    facts = scan.gather(resolved, None, tmp_path, None, env={}, markers=None)
    fast = requirements.find(facts)
    monkeypatch.setattr(requirements, "extra_only", lambda text: False)
    slow = requirements.find(facts)
    assert fast[0] == slow[0] and fast[1] == slow[1]
    assert fast[2] == slow[2] > 0
