"""A judged lock kept for the next re-lock whose answer did not change (`sparkenv lock`).

Judging uv's answer (metadata, file lists, ELF, sdists, old fallbacks, the rules) costs more CPU than
reading it, and a re-lock mostly gets the very answer it got last time. What the judgement of the
resolved set found is kept here under a key made of everything it reads:
- uv's answer (the sha256 of its text), the inputs as parsed, the profile, the index options and the
  index sparkenv's own reads go to, the install stages, what is kept out, --allow-replace,
  --exclude-newer, and the findings on the declared requirements;
- sparkenv itself: its version, the size and mtime of every file of its package (code and data files:
  a rule or a data file edited in place changes the key), the interpreter and `packaging`'s version;
- and, checked on every use, the sha256 of each index page the judgement read (the old-fallback verdict
  changes when a package releases): the page is asked of the index as the full judgement asks it
  (index/pages.py: a fresh page, a 304, the same bytes again) and must hash as it did.
The wheels, sdists and metadata the judgement reads are named by the sha256 in uv's answer: the same
answer means the same bytes. Nothing depends on the date or on an environment variable beyond those.

Only a complete judgement is kept: every read answered, no build failure, no ERROR finding. A key part
changed, a page changed, an entry damaged (core/cache.py's one rule): the lock judges afresh and the
entry is written again. Never trusted, never a FAIL turned into a PASS. The file holds findings
(sparkenv.core.printable: no credential) and hashes; the keys are made
from redacted text (sparkenv.core.redact).

A prediction is kept beside it, by what is known before uv starts (the same parts, with the lock being
replaced in place of uv's answer): when one exists, uv is expected to answer as last time, and the reads
beside uv that only serve a full judgement (early reads, the head start's imports) are not made; only
the index pages the kept judgement rests on are checked (page_cache.digest_now: no decoding). Should uv
answer otherwise, the lock judges afresh after uv (slower only then).

The findings on the declared requirements are kept too, under the rules' facts and sparkenv itself (the
rules are pure functions of both): a re-lock that expects a kept judgement takes them rather than judging
them again beside uv; any other lock judges them and keeps what it found.

The lock's two files as rendered for a kept judgement are kept too, under the judgement's key and what
else they record (where the lock and its inputs are, the inputs' bytes, the options: run._layout): a
re-lock that takes both neither parses uv's answer nor renders, and writes the same bytes.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparkenv.core.cache import Store, stat_key
from sparkenv.core.redact import redact

if TYPE_CHECKING:
    from sparkenv.core.report import Finding

STORE = Store("judged-locks", "1")  # core/cache.py; bump the version when what an entry holds changes


@functools.lru_cache(maxsize=1)
def code_stamp() -> str:
    """sparkenv as it is on disk: every file of the package by its identity (cache.stat_key, no file
    read), its version, the interpreter and packaging's version (markers and specifiers are
    its)."""
    import packaging

    import sparkenv

    root = Path(sparkenv.__file__).parent
    h = hashlib.sha256(f"{sparkenv.__version__}\0{sys.version}\0{packaging.__version__}\0".encode())
    for folder_, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith((".pyc", ".pyo")):
                continue
            path = os.path.join(folder_, name)
            h.update(f"{os.path.relpath(path, root)}\0{stat_key(path)}\0".encode())
    return h.hexdigest()


def reads_stamp(index_url: str | None) -> str:
    """The index sparkenv's own reads go to: `index_url`, else the installers' default
    (index/default_index.py) as known without asking it (importing pip costs more than the check): where pip's
    definition of it is (size, mtime), else which uv would be asked."""
    if index_url is not None:
        return index_url
    import importlib.util

    spec = importlib.util.find_spec("pip")
    for where in (spec.submodule_search_locations or []) if spec is not None else []:
        defined = Path(where) / "_internal" / "models" / "index.py"
        with contextlib.suppress(OSError):
            st = defined.stat()
            return f"pip {defined} {st.st_size} {st.st_mtime_ns}"
    from sparkenv.index.uv_binary import uv_binary

    try:
        uv = uv_binary()
        st = os.stat(uv)
    except Exception:  # no uv: the lock has stopped already; a key still
        return "none"
    return f"uv {uv} {st.st_size} {st.st_mtime_ns}"


def key(*parts: object) -> str:
    """sha256 over the parts' repr, redacted (a key never hashes a credential)."""
    h = hashlib.sha256()
    for part in parts:
        h.update(redact(repr(part)).encode("utf-8", "backslashreplace") + b"\0")
    return h.hexdigest()


def file_sha256(path: Path | None) -> str:
    """The sha256 of a file's bytes; "" when there is none or it cannot be read."""
    if path is None:
        return ""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


@dataclass(frozen=True)
class Entry:
    """A kept judgement: the resolved set's findings and the index pages they rest on (project ->
    (the page's URL, redacted; the sha256 of its bytes))."""

    findings: tuple[Finding, ...]
    pages: dict[str, tuple[str, str]]


def _read(key_: str) -> dict[str, Any] | None:
    body = STORE.load(key_)
    return body if isinstance(body, dict) else None


def load(judgement: str) -> Entry | None:
    """The judgement kept under this key; None when there is none or it is damaged."""
    body = _read(judgement)
    if body is None:
        return None
    try:
        pages = {k: (url, sha) for k, (url, sha) in body["pages"].items()}
        if not all(
            isinstance(k, str) and isinstance(url, str) and isinstance(sha, str) and len(sha) == 64
            for k, (url, sha) in pages.items()
        ):
            return None
        found = _findings(body["findings"])
    except (KeyError, TypeError, ValueError):
        return None
    return None if found is None else Entry(found, pages)


def _findings(rows: Any) -> tuple[Finding, ...] | None:
    """Findings from their rows (`_rows`); None when a row is not one. TypeError, ValueError: not rows."""
    from sparkenv.core.report import Finding, Status

    found = []
    for gid, status, summary, subject, evidence, fix in rows:
        texts = [summary, subject, *evidence]
        if not all(isinstance(t, str) for t in texts) or not (fix is None or isinstance(fix, str)):
            return None
        found.append(Finding(gid, Status(status), summary, subject, tuple(evidence), fix))
    return tuple(found)


def _rows(findings: list[Finding]) -> list[list[Any]]:
    return [[str(f.id), f.status.value, f.summary, f.subject, list(f.evidence), f.fix] for f in findings]


def keepable(findings: list[Finding]) -> bool:
    """Only a judgement with no ERROR finding is kept: the check that could not run may run next time."""
    from sparkenv.core.report import Status

    return all(f.status is not Status.ERROR for f in findings)


def save(judgement: str, findings: list[Finding], pages: dict[str, tuple[str, str]]) -> None:
    body = {"findings": _rows(findings), "pages": {k: list(v) for k, v in sorted(pages.items())}}
    STORE.save(judgement, body)


def predicted(before_uv: str) -> tuple[str, Entry] | None:
    """(judgement key, its entry) that the last lock with the same key before uv came to; None when
    there is none or either file is damaged."""
    body = _read(f"{before_uv}.predict")
    judgement = body.get("judgement") if body is not None else None
    if not isinstance(judgement, str) or len(judgement) != 64:
        return None
    entry = load(judgement)
    return (judgement, entry) if entry is not None else None


def predict(before_uv: str, judgement: str) -> None:
    """A lock with this key before uv is expected to come to this judgement."""
    STORE.save(f"{before_uv}.predict", {"judgement": judgement})


def declared(facts_key: str) -> tuple[Finding, ...] | None:
    """The findings a judgement of the declared requirements came to under this key (`key` of the rules'
    facts and sparkenv itself: they are pure functions of both); None when there are none or the record
    is damaged."""
    body = _read(f"{facts_key}.declared")
    try:
        return None if body is None else _findings(body["findings"])
    except (KeyError, TypeError, ValueError):
        return None


def keep_declared(facts_key: str, findings: list[Finding]) -> None:
    STORE.save(f"{facts_key}.declared", {"findings": _rows(findings)})


@dataclass(frozen=True)
class Rendered:
    """A lock's two files as rendered for a kept judgement, with what the report says of them."""

    pylock: str
    requirements: str
    packages: int
    stages: int


def rendered(layout: str) -> Rendered | None:
    """The files rendered last time under this key (the judgement's key and where and how they are
    written: run._layout); None when there are none or the entry is damaged."""
    body = _read(f"{layout}.files")
    if body is None:
        return None
    got = (body.get("pylock"), body.get("requirements"), body.get("packages"), body.get("stages"))
    if not (isinstance(got[0], str) and isinstance(got[1], str)):
        return None
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in got[2:]):
        return None
    return Rendered(*got)  # type: ignore[arg-type]


def keep_rendered(layout: str, pylock: str, requirements: str, packages: int, stages: int) -> None:
    body = {"pylock": pylock, "requirements": requirements, "packages": packages, "stages": stages}
    STORE.save(f"{layout}.files", body)
