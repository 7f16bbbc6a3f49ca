"""Where sparkenv's own HTTP requests (index pages, PEP 658 metadata, wheel ranges) find credentials:
where uv and pip read them. In order: the user-info of an index URL given to this run (command line or
input file), of uv's and pip's index variables (UV_DEFAULT_INDEX, UV_INDEX, UV_INDEX_URL,
UV_EXTRA_INDEX_URL, PIP_INDEX_URL, PIP_EXTRA_INDEX_URL), then netrc (NETRC or ~/.netrc). Matched by realm
(scheme, host, port), as uv matches them. Not read: keyring (uv asks it only with
--keyring-provider subprocess; neither is wired here yet)."""

from __future__ import annotations

import base64
import os
import threading
import urllib.parse
import urllib.request
from collections.abc import Iterable

from sparkenv.redact import redact

Realm = tuple[str, str, int | None]

_ENV = (
    "UV_DEFAULT_INDEX",
    "UV_INDEX",
    "UV_INDEX_URL",
    "UV_EXTRA_INDEX_URL",
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
)
_given: dict[Realm, tuple[str, str]] = {}
_lock = threading.Lock()


def _realm(url: str) -> Realm | None:
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if not parts.hostname:
        return None
    return (parts.scheme.lower(), parts.hostname.lower(), port)


def _userinfo(url: str) -> tuple[Realm, tuple[str, str]] | None:
    parts = urllib.parse.urlsplit(url)
    realm = _realm(url)
    if realm is None or parts.username is None:
        return None
    user = urllib.parse.unquote(parts.username)
    return realm, (user, urllib.parse.unquote(parts.password or ""))


def _urls_in(value: str) -> list[str]:
    # UV_INDEX is a space-separated list of `[name=]url`
    return [word.split("=", 1)[1] if "=" in word.split("://", 1)[0] else word for word in value.split()]


def remember(urls: Iterable[str | None]) -> None:
    """Index URLs this run was given: their user-info serves sparkenv's requests to the same realm."""
    with _lock:
        for url in urls:
            found = _userinfo(url) if url else None
            if found:
                _given[found[0]] = found[1]


def _from_env(realm: Realm) -> tuple[str, str] | None:
    for name in _ENV:
        for url in _urls_in(os.environ.get(name, "")):
            found = _userinfo(url)
            if found and found[0] == realm:
                return found[1]
    return None


def _from_netrc(host: str) -> tuple[str, str] | None:
    import netrc

    path = os.environ.get("NETRC") or os.path.expanduser("~/.netrc")
    try:
        entry = netrc.netrc(path).authenticators(host)
    except (OSError, netrc.NetrcParseError):
        return None
    if not entry:
        return None
    return entry[0] or "", entry[2] or ""


def in_url(url: str) -> bool:
    return _userinfo(url) is not None


def lookup(url: str, netrc: bool = True) -> tuple[str, str] | None:
    """(user, password) for the realm of `url`, or None: the URL's own user-info first."""
    own = _userinfo(url)
    if own:
        return own[1]
    realm = _realm(url)
    if realm is None:
        return None
    with _lock:
        given = _given.get(realm)
    return given or _from_env(realm) or (_from_netrc(realm[1]) if netrc else None)


def request(url: str, headers: dict[str, str] | None = None) -> urllib.request.Request:
    """A request for `url` without its user-info (urllib cannot send it), with the realm's credentials as
    basic auth. The header is not carried over a redirect to another host (add_unredirected_header)."""
    found = lookup(url)
    req = urllib.request.Request(redact(url), headers=headers or {})
    if found:
        token = base64.b64encode(f"{found[0]}:{found[1]}".encode()).decode()
        req.add_unredirected_header("Authorization", f"Basic {token}")
    return req


def netrc_lines(urls: Iterable[str], netrc: bool = True) -> list[str]:
    """netrc entries for the hosts of `urls` whose credentials are known: what a build step that fetches
    from those indexes needs (pip reads NETRC), written only into a stage the image does not keep."""
    out, seen = [], set()
    for url in urls:
        realm = _realm(url)
        found = lookup(url, netrc)
        if realm is None or found is None or realm[1] in seen:
            continue
        seen.add(realm[1])
        out.append(f"machine {realm[1]} login {found[0]} password {found[1]}")
    return out


def default_index() -> str | None:
    """The index uv resolves against when none is given (UV_DEFAULT_INDEX, else UV_INDEX_URL)."""
    for name in ("UV_DEFAULT_INDEX", "UV_INDEX_URL"):
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return None
