"""sparkenv/core/names.py normalises distribution names as packaging.utils.canonicalize_name does (PEP 503)
without importing packaging.utils: the same answer on awkward spellings, on every distribution installed
here, and on any string Hypothesis draws from the characters names are made of."""

from __future__ import annotations

import os
import subprocess
import sys

from hypothesis import given
from hypothesis import strategies as st
from packaging.utils import canonicalize_name

from sparkenv.core.names import canonical

AWKWARD = [
    "Foo_Bar",
    "foo.bar",
    "FOO--bar__baz",
    "zope.interface",
    "typing_extensions",
    "A",
    "a-_-.b",
    "Flash_Attn",
]


def test_awkward_and_installed_names_match_packaging() -> None:
    names = list(AWKWARD)
    for site in sys.path:
        if site.endswith("site-packages") and os.path.isdir(site):
            names += [n.split("-")[0] for n in os.listdir(site) if n.endswith(".dist-info")]
    assert len(names) > 20
    assert {n: canonical(n) for n in names} == {n: canonicalize_name(n) for n in names}


@given(st.text(alphabet="abcXYZ019-_.", min_size=1, max_size=24))
def test_any_spelling_matches_packaging(name: str) -> None:
    assert canonical(name) == canonicalize_name(name)


def test_a_record_load_does_without_packaging_utils() -> None:
    """Why the twin is kept: loading a data file's records (every command does; the unchanged audit and the
    gate among them) imports no packaging.utils, and with it no packaging.tags, sysconfig or logging."""
    code = (
        "import sys; from sparkenv import knowledge; knowledge.gate(); "
        "print(sorted(m for m in ('packaging.utils', 'packaging.tags', 'logging') if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
