"""Old fallbacks: a resolved version far older than the newest release of its package, and why.

uv quietly takes an old release when no newer one fits (no wheel for the target, a requirement
somewhere that caps it); on a Spark that is how a 2023 sdist-only inference server ends up in a lock.
Looked at: the declared requirements that are not pinned exactly, and every package only an sdist
fits. Their index pages (PEP 691 JSON with PEP 700 upload times where the index serves it, else the
PEP 503 HTML) are fetched concurrently; what the rule takes of each is kept by URL under the index's
HTTP caching (index/pages.py). A package the user capped themselves is their choice, not a
fallback.
"""

from __future__ import annotations

import datetime as dt
import heapq
import html.parser
import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from packaging import tags
from packaging.specifiers import SpecifierSet
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from sparkenv.core.redact import redact
from sparkenv.environment.markers import applies
from sparkenv.environment.profiles import Profile
from sparkenv.facts.graph import Edge
from sparkenv.facts.resolved import FallbackFacts
from sparkenv.index import pages as page_cache
from sparkenv.index.default_index import installers_default
from sparkenv.knowledge import packages


@dataclass
class Release:
    version: Version
    files: list[str] = field(default_factory=list)
    urls: dict[str, str] = field(default_factory=dict)  # file name -> absolute URL
    uploaded: dt.datetime | None = None
    requires_python: str = ""
    sha256: dict[str, str] = field(default_factory=dict)  # file name -> its sha256, as the index gives it


def fallback_days() -> int:
    return packages().fallback_days


class _Links(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.files: list[tuple[str, bool, str, str]] = []  # (filename, yanked, requires-python, href)
        self._attrs: dict[str, str | None] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._attrs = dict(attrs)

    def handle_data(self, data: str) -> None:
        if self._attrs:
            a = self._attrs
            href = a.get("href") or ""
            self.files.append((data.strip(), "data-yanked" in a, a.get("data-requires-python") or "", href))
            self._attrs = {}


def _when(value: object) -> dt.datetime | None:
    if isinstance(value, dt.datetime):
        return value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
    if not isinstance(value, str):
        return None
    try:
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _newest_versions(listed: object, keep: int = 3) -> list[str] | None:
    """The newest final releases among PEP 700's `versions` list (None when the page has none)."""
    if not isinstance(listed, list):
        return None
    finals = []
    for v in listed:
        try:
            parsed = Version(str(v))
        except InvalidVersion:
            continue
        if not parsed.is_prerelease and not parsed.is_devrelease:
            finals.append((parsed, str(v)))
    return [
        f"-{s}" for _, s in heapq.nlargest(keep, finals)
    ]  # sorted(…, reverse=True)[:keep], fewer comparisons


def _fragment_sha256(href: str) -> str:
    """The sha256 a simple-index link carries in its fragment (`…whl#sha256=<hex>`), else ''."""
    frag = href.partition("#")[2]
    return frag.removeprefix("sha256=") if frag.startswith("sha256=") else ""


_Entry = tuple[
    str, bool, str, dt.datetime | None, str, str
]  # name, yanked, requires-python, upload, href, sha256


# redacted page URL -> sha256 of the bytes behind the last answer releases() gave for it in this process
# ("" when the page could not be read): what a judged lock rests on (lock/judged_cache.py)
_DIGESTS: dict[str, str] = {}


def page_read(index_url: str | None, key: str) -> tuple[str, str]:
    """(the page's URL, redacted; the sha256 of the bytes behind releases()'s last answer for `key` in
    this process, "" when it was not asked or the page could not be read)."""
    url = _page_url(index_url, key)
    return (redact(url), _DIGESTS.get(redact(url), "")) if url is not None else ("", "")


def releases(
    index_url: str | None, key: str, timeout: float = 20.0, include: str = ""
) -> dict[Version, Release] | None:
    """The project's releases on the index (yanked files left out); None when the page cannot be read.
    `index_url` None: the installers' own default index (index/default_index.py), None when they name none.
    `include`: a version to parse besides the newest ones (the one uv picked, for the early reads).
    What is kept of the page (index/pages.py) is taken where the index's caching allows it (a
    fresh page, a 304), or where the page came again byte for byte; the page is decoded otherwise."""
    url = _page_url(index_url, key)
    if url is None:
        return None
    got, sha = _releases(url, timeout, include)
    if not include:
        _DIGESTS[redact(url)] = sha if got is not None else ""
    return got


def _releases(url: str, timeout: float, include: str) -> tuple[dict[Version, Release] | None, str]:
    """releases() of the page at `url`, with the sha256 of the bytes it came from."""
    kept = None if include else page_cache.load(url)
    got = _unkept(kept.data) if kept is not None else None
    if got is None:  # none kept, or not releases (a damaged file): not trusted, read anew
        kept = None
    elif kept is not None and kept.fresh():
        return got, kept.digest
    page = page_cache.get(url, timeout, kept.validators() if kept is not None else {})
    if page is None:
        return None, ""
    status, body, headers = page
    if status == 304 and kept is not None:
        page_cache.keep_again(kept, headers)
        return got, kept.digest
    kind = "json" if "json" in headers.get("Content-Type", "") else "html"
    sha = page_cache.digest(body)
    if kept is not None and kept.kind == kind and kept.digest == sha:  # the same bytes decode the same
        page_cache.keep_again(kept, headers)
        return got, sha
    out = _decoded(body, kind, url, include)
    if out is not None and not include:
        _keep(url, headers, kind, sha, out)
    return out, sha


def _decoded(body: bytes, kind: str, url: str, include: str = "") -> dict[Version, Release] | None:
    """A page's releases from its body (PEP 691 JSON or PEP 503 HTML); None when the JSON is not a page."""
    if kind == "json":
        entries = _json_entries(body, include)
        if entries is None:
            return None
    else:
        entries = _html_entries(body)
    return _by_version(entries, url)


def _keep(url: str, headers: Any, kind: str, sha: str, out: dict[Version, Release]) -> None:
    told = page_cache.policy(headers)
    if not told.store:
        page_cache.forget(url)
        return
    kept = page_cache.Kept(url, time.time(), told.lifetime, told.no_cache, told.etag, told.last_modified,
                           kind, sha, _kept(out))  # fmt: skip
    page_cache.save(kept)


def _kept(out: dict[Version, Release]) -> list[list[Any]]:
    """The compact form of a page's releases (JSON types): per release its version, upload time,
    requires-python, and its files with their URLs and sha256, in the page's order."""
    return [
        [
            str(v), r.uploaded.isoformat() if r.uploaded else None, r.requires_python, r.files,
            [r.urls.get(f, "") for f in r.files], [r.sha256.get(f, "") for f in r.files],
        ]
        for v, r in out.items()
    ]  # fmt: skip


def _unkept(data: Any) -> dict[Version, Release] | None:
    """A page's releases from their compact form; None when it is not one (a damaged file)."""
    out: dict[Version, Release] = {}
    try:
        for v, uploaded, rp, files, urls, shas in data:
            texts = [rp, *files, *urls, *shas]
            if not all(isinstance(t, str) for t in texts) or not len(files) == len(urls) == len(shas):
                return None
            when = _when(uploaded) if uploaded is not None else None
            if uploaded is not None and when is None:
                return None
            version = Version(v)
            out[version] = Release(
                version, list(files), dict(zip(files, urls, strict=True)), when, rp,
                {f: s for f, s in zip(files, shas, strict=True) if s},
            )  # fmt: skip
    except (TypeError, ValueError, InvalidVersion):
        return None
    return out


def release(index_url: str | None, key: str, version: str, timeout: float = 20.0) -> Release | None:
    """One release of the project (its files, their URLs and sha256), or None: what the early reads need
    of a pick."""
    page = _page(index_url, key, timeout)
    if page is None:
        return None
    url, body, ctype = page
    if "json" in ctype:
        entries = _json_entries(body, version)
        if entries is None:
            return None
    else:
        entries = _html_entries(body)
    return next((r for v, r in _by_version(entries, url).items() if str(v) == version), None)


def every_release(index_url: str | None, key: str, timeout: float = 20.0) -> dict[Version, Release] | None:
    """Every release on the project's page, old ones included (releases() keeps the newest only): where
    the nearest release with a wheel for the target is looked for. None when the page cannot be read."""
    page = _page(index_url, key, timeout)
    if page is None:
        return None
    url, body, ctype = page
    entries = _json_entries(body, every=True) if "json" in ctype else _html_entries(body)
    return _by_version(entries, url) if entries is not None else None


def _page_url(index_url: str | None, key: str) -> str | None:
    index_url = index_url or installers_default()
    if index_url is None:
        return None
    return index_url.rstrip("/") + f"/{key}/"


def _page(index_url: str | None, key: str, timeout: float) -> tuple[str, bytes, str] | None:
    """(URL, body, content type) of the project's index page; None when it cannot be read."""
    url = _page_url(index_url, key)
    page = page_cache.get(url, timeout, {}) if url is not None else None
    if url is None or page is None:
        return None
    return url, page[1], page[2].get("Content-Type", "")


def _html_entries(body: bytes) -> list[_Entry]:
    parser = _Links()
    parser.feed(body.decode("utf-8", errors="replace"))
    return [(n, y, rp, None, href, _fragment_sha256(href)) for n, y, rp, href in parser.files]


def _json_entries(body: bytes, include: str = "", every: bool = False) -> list[_Entry] | None:
    """The files of a PEP 691 page (of its newest releases only, and `include`; `every`: all of them);
    None when the page is not one."""
    entries: list[_Entry] = []
    try:
        page = json.loads(body)
        wanted = None if every else _newest_versions(page.get("versions"))
        if wanted is not None and include:
            wanted.append(include)
        for f in page.get("files", []):
            if wanted is not None and not any(v in f["filename"] for v in wanted):
                continue  # big projects list thousands of files: parse only the newest releases
            yanked = bool(f.get("yanked"))
            when = _when(f.get("upload-time"))
            sha = (f.get("hashes") or {}).get("sha256", "")
            entries.append(
                (f["filename"], yanked, f.get("requires-python") or "", when, f.get("url", ""), sha)
            )
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    return entries


# an absolute URL that urljoin gives back as it is: printable ASCII, nothing urllib.parse would split off
# or normalize (query, parameters, fragment, brackets, backslashes, a scheme in capitals)
_PLAIN_URL = re.compile(r"https?://[A-Za-z0-9._~%!$&'()*+,=:@-]+/[A-Za-z0-9._~%!$&'()*+,=:@/-]*")


def _join(base: str, href: str) -> str:
    """urljoin(base, href) less its fragment. An index's JSON page names its files by absolute URLs,
    which urljoin would parse and put back together unchanged (a fifth of a big page's decoding): those
    are taken as they are."""
    if not href:
        return ""
    plain = href.split("#", 1)[0]
    if _PLAIN_URL.fullmatch(plain):
        return plain
    return urllib.parse.urljoin(base, href).split("#", 1)[0]


def _by_version(entries: list[_Entry], url: str) -> dict[Version, Release]:
    """The page's files grouped into releases (yanked files and unparsable names left out)."""
    out: dict[Version, Release] = {}
    for name, yanked, rp, when, href, sha in entries:
        if yanked:
            continue
        try:
            version = (
                parse_wheel_filename(name)[1] if name.endswith(".whl") else parse_sdist_filename(name)[1]
            )
        except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
            continue
        rel = out.setdefault(version, Release(version))
        rel.files.append(name)
        rel.urls[name] = _join(url, href)
        if isinstance(sha, str) and len(sha) == 64:
            rel.sha256[name] = sha.lower()
        rel.requires_python = rel.requires_python or rp
        if when and (rel.uploaded is None or when < rel.uploaded):
            rel.uploaded = when
    return out


def _target_tags(profile: Profile) -> set[tags.Tag]:
    from sparkenv.environment import wheel_tags

    glibc = int(profile.manylinux.rsplit("_", 1)[-1])
    return set(wheel_tags.accepted(profile.python_minor, profile.machine, glibc))


def _python_misfit(rel: Release, profile: Profile) -> str | None:
    """Why the release's Requires-Python excludes the target's Python (None: it does not)."""
    if rel.requires_python:
        try:
            if not SpecifierSet(rel.requires_python).contains(profile.python, prereleases=True):
                return f"it requires Python {rel.requires_python}"
        except ValueError:
            pass
    return None


def _has_target_wheel(rel: Release, target: set[tags.Tag]) -> bool:
    for f in rel.files:
        try:
            if f.endswith(".whl") and target & set(parse_wheel_filename(f)[3]):
                return True
        except InvalidWheelFilename:
            continue
    return False


def _fits(rel: Release, profile: Profile, target: set[tags.Tag]) -> str | None:
    """Why no file of this release installs on the target (None: one does)."""
    misfit = _python_misfit(rel, profile)
    if misfit:
        return misfit
    wheels = [f for f in rel.files if f.endswith(".whl")]
    if any(not f.endswith(".whl") for f in rel.files):
        return None
    if _has_target_wheel(rel, target):
        return None
    return f"none of its {len(wheels)} wheel(s) fits {profile.python_platform} and it has no sdist"


def nearest_with_wheel(releases: dict[Version, Release], profile: Profile, tried: str = "") -> str:
    """The release with a wheel that installs on the target nearest to `tried`: the newest such release
    not newer than it, else the oldest newer one ("" when none has such a wheel). No `tried`: the
    newest."""
    target = _target_tags(profile)
    fitting = sorted(
        v
        for v, rel in releases.items()
        if not _python_misfit(rel, profile) and _has_target_wheel(rel, target)
    )
    try:
        pivot = Version(tried) if tried else None
    except InvalidVersion:
        pivot = None
    if not fitting:
        return ""
    if pivot is None:
        return str(fitting[-1])
    below = [v for v in fitting if v <= pivot]
    return str(below[-1] if below else fitting[0])


def _unmet(
    rel: Release,
    profile: Profile,
    target: set[tags.Tag],
    versions: dict[str, str],
    url: str | None,
    reads: Reads | None = None,
) -> str:
    """Which requirement of a newer release stops it: one it needs that has no file for the target, or
    one the lock's other packages exclude. Reads that release's metadata (PEP 658, else the wheel).
    `reads` notes the pages read and any read that failed (the answer then says less than it could)."""
    from sparkenv.index import metadata

    reads = reads if reads is not None else Reads()
    fits = [f for f in rel.files if f.endswith(".whl") and target & set(parse_wheel_filename(f)[3])]
    if not fits or not rel.urls.get(fits[0]):
        return "a requirement of it cannot be met with the rest"
    ref = metadata.FileRef("", fits[0], rel.urls[fits[0]], rel.sha256.get(fits[0], ""))
    text = _metadata_of(ref, reads)
    if text is None:
        return "a requirement of it cannot be met with the rest"
    env = profile.marker_env()
    problems = []
    for req in metadata.parse(text, "").requires:
        if not applies(req.marker, env):
            continue
        dep = canonicalize_name(req.name)
        if dep in versions:
            continue  # resolved, so met (or uv would have said so)
        page = releases(url, dep)
        reads.pages.add(dep)
        ok = [r for v, r in (page or {}).items() if req.specifier.contains(v, prereleases=True)]
        if page is not None and not any(_fits(r, profile, target) is None for r in ok):
            problems.append(f"it needs {req}, which has no release for {profile.python_platform}")
    return "; ".join(problems[:2]) or "a requirement of it cannot be met with the rest"


def _metadata_of(ref: Any, reads: Reads) -> str | None:
    """A newer release's METADATA (PEP 658, else from the wheel); None when it cannot be read. `reads`
    notes a read whose answer may differ next time."""
    from sparkenv.index import metadata, remote_zip

    text = None
    if ref.sha256:  # the file's bytes are known by their hash: its metadata is cached by it, never stale
        try:
            text = metadata._text(ref, 20.0)[0]
        except remote_zip.Unreadable:
            reads.unanswered = True
            return None
    else:
        reads.unanswered = True  # bytes not named by a hash: what they say may change under the same URL
        text = metadata._pep658(ref, 20.0)
    if text is None:
        try:
            text = remote_zip.read_dist_info(ref.url, ref.filename, ("METADATA",), 20.0, ref.sha256)[
                "METADATA"
            ].decode()
        except (remote_zip.Unreadable, KeyError, UnicodeDecodeError):
            reads.unanswered = True
    return text


@dataclass
class Reads:
    """What a fallback verdict rested on: the projects whose index page it read, and whether a read
    failed (then a verdict made again may say more)."""

    pages: set[str] = field(default_factory=set)
    unanswered: bool = False


PAGE_READERS = 8  # pages read at once: each one more at a time costs a connection (TLS handshake)


def prefetch(index_url: str | None, keys: list[str]) -> dict[str, Future[dict[Version, Release] | None]]:
    """Start reading these index pages now (while uv resolves): the declared names are known before.
    PAGE_READERS at a time, so the connections are reused (sparkenv/index/fetch.py) rather than one opened
    per page all at once. Daemon threads: a lock stopped by a signal or an error does not wait for them
    to time out."""
    return page_cache.at_once(keys, lambda k: releases(index_url, k), PAGE_READERS, "sparkenv-page")


def gather(
    candidates: dict[str, tuple[str, object]],
    declared: dict[str, SpecifierSet],
    graph_edges: list[Edge],
    chain: dict[str, list[str]],
    profile: Profile,
    index_url: str | None,
    versions: dict[str, str] | None = None,
    prefetched: dict[str, Future[dict[Version, Release] | None]] | None = None,
    reads: Reads | None = None,
) -> list[FallbackFacts]:
    """`candidates`: name -> (locked version, the locked file's upload time as uv recorded it, or None);
    `versions`: every locked name -> version. Reads the index pages concurrently; digs for the reasons
    (a newer release's metadata) only where rules/g9.py would call it a fallback. `reads` is told what
    the verdicts rested on."""
    reads = reads if reads is not None else Reads()
    if not candidates:
        return []
    url = index_url
    pages = _pages(list(candidates), url, prefetched or {})
    reads.pages |= set(candidates)
    target = _target_tags(profile)
    ctx = _Context(declared, graph_edges, chain, profile, target, versions or {}, url, fallback_days(), reads)
    out: list[FallbackFacts] = []
    for key, (version, uploaded) in sorted(candidates.items()):
        page = pages.get(key)
        try:
            locked_v = Version(version)
        except InvalidVersion:
            continue
        if page:
            found = _fallback(key, locked_v, version, uploaded, page, ctx)
            if found:
                out.append(found)
    return out


def _pages(
    keys: list[str], url: str | None, prefetched: dict[str, Future[dict[Version, Release] | None]]
) -> dict[str, dict[Version, Release] | None]:
    """Every candidate's index page: those started early (prefetch) waited for, the rest read now."""
    missing = [k for k in keys if k not in prefetched]
    pages: dict[str, dict[Version, Release] | None] = {}
    if missing:
        with ThreadPoolExecutor(min(8, len(missing))) as pool:
            pages = dict(zip(missing, pool.map(lambda k: releases(url, k), missing), strict=True))
    for k, fut in prefetched.items():
        try:
            pages[k] = fut.result(timeout=30)
        except Exception:  # an unreadable page only means no fallback verdict
            pages[k] = None
    return pages


@dataclass(frozen=True)
class _Context:
    """What every candidate is compared with: the user's own specifiers, the lock's edges and chains,
    the target, every locked version and the index."""

    declared: dict[str, SpecifierSet]
    graph_edges: list[Edge]
    chain: dict[str, list[str]]
    profile: Profile
    target: set[tags.Tag]
    versions: dict[str, str]
    url: str | None
    limit: int  # days (data/packages.toml)
    reads: Reads


def _fallback(
    key: str, locked_v: Version, version: str, uploaded: object, page: dict[Version, Release], ctx: _Context
) -> FallbackFacts | None:
    """One locked package against its newest final release: how old, capped by whom, and (where the
    rule would call it a fallback) why the two newer releases do not fit. None when it is the newest."""
    from sparkenv.rules.g9_resolved import is_fallback

    finals = [v for v in page if not v.is_prerelease and not v.is_devrelease]
    newest = max(finals, default=None)
    if newest is None or newest <= locked_v:
        return None
    chosen = page.get(locked_v)
    then = _when(uploaded) or (chosen.uploaded if chosen else None)
    now = page[newest].uploaded
    gap = (now - then).days if now and then else None
    newer_minor = (newest.major, newest.minor) > (locked_v.major, locked_v.minor)
    spec = ctx.declared.get(key)
    capped = spec is not None and bool(str(spec)) and not spec.contains(newest, prereleases=True)
    caps = _caps(key, newest, ctx)
    reasons: list[str] = []
    if not caps and not capped and is_fallback(gap, newer_minor, ctx.limit):
        newer = sorted((v for v in finals if v > locked_v), reverse=True)[:2]
        reasons = [f"{v}: {_why_not(page[v], ctx)}" for v in newer]
    return FallbackFacts(key, version, str(newest), gap, newer_minor, capped, tuple(caps), tuple(reasons))


def _caps(key: str, newest: Version, ctx: _Context) -> list[str]:
    """The chains to every requirement of the lock that excludes the newest release."""
    return sorted(
        {
            " → ".join([*ctx.chain.get(e.source, [e.source]), f"{key}{e.req.specifier}"])
            for e in ctx.graph_edges
            if e.target == key and not e.req.specifier.contains(newest, prereleases=True)
        }
    )


def _why_not(rel: Release, ctx: _Context) -> str:
    return _fits(rel, ctx.profile, ctx.target) or _unmet(
        rel, ctx.profile, ctx.target, ctx.versions, ctx.url, ctx.reads
    )


def declared_specifiers(requirements: list, env: dict[str, str]) -> dict[str, SpecifierSet]:  # type: ignore[type-arg]
    out: dict[str, SpecifierSet] = {}
    for d in requirements:
        if d.key and not d.constraint and d.applies(env):
            out[d.key] = SpecifierSet(str(d.specifier)) if str(d.specifier) else SpecifierSet()
    return out
