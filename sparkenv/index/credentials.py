"""Where sparkenv's own HTTP requests (index pages, PEP 658 metadata, wheel ranges) find credentials:
where uv and pip read them. In order: the user-info of an index URL given to this run (command line or
input file), of uv's and pip's index variables (UV_DEFAULT_INDEX, UV_INDEX, UV_INDEX_URL,
UV_EXTRA_INDEX_URL, PIP_INDEX_URL, PIP_EXTRA_INDEX_URL), then netrc (NETRC or ~/.netrc). Matched by realm
(scheme, host, port), as uv matches them. A user name known without its password (`http://alice@host/…`,
a netrc entry with no password) is completed from the `keyring` command when uv or pip are told to ask
it (UV_KEYRING_PROVIDER=subprocess, PIP_KEYRING_PROVIDER=subprocess), as they ask it: `keyring get URL
USER`, then `keyring get HOST[:PORT] USER`; its answer is kept in memory only, for this run."""

from __future__ import annotations

import base64
import os
import threading
import urllib.parse
from collections.abc import Iterable
from typing import TYPE_CHECKING

from sparkenv.core.redact import redact

if TYPE_CHECKING:  # imported where a request is made: `sparkenv lock` starts uv before any
    import urllib.request

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
_KEYRING_TIMEOUT_S = 30.0  # a keyring backend may unlock a store; one that hangs must not hang sparkenv
_asked: dict[tuple[str, str], str | None] = {}  # (service, user) -> the keyring's answer, this run only


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


def _keyring_wanted() -> bool:
    """uv and pip ask the keyring command only when told to; sparkenv follows the same switch."""
    return "subprocess" in (
        os.environ.get("UV_KEYRING_PROVIDER", "").strip().lower(),
        os.environ.get("PIP_KEYRING_PROVIDER", "").strip().lower(),
    )


def _keyring(service: str, user: str) -> str | None:
    """`keyring get SERVICE USER`: the password on its first line, or None (no entry, no keyring command,
    a failure, or no answer within the timeout). The child is killed with its group on every path."""
    import subprocess

    from sparkenv.core import children

    key = (service, user)
    with _lock:
        if key in _asked:
            return _asked[key]
    answer = None
    try:
        proc = children.spawn(["keyring", "get", service, user], text=True)
    except OSError:
        proc = None
    if proc is not None:
        try:
            out, _ = proc.communicate(timeout=_KEYRING_TIMEOUT_S)
            if proc.returncode == 0 and out.strip():
                answer = out.splitlines()[0].rstrip("\r\n")
        except subprocess.TimeoutExpired:
            pass
        finally:
            children.stop(proc)
    with _lock:
        _asked[key] = answer
    return answer


def _from_keyring(url: str, user: str) -> tuple[str, str] | None:
    if not user or not _keyring_wanted():
        return None
    realm = _realm(url)
    if realm is None:
        return None
    host = realm[1] if realm[2] is None else f"{realm[1]}:{realm[2]}"
    for service in (redact(url), host):
        password = _keyring(service, user)
        if password is not None:
            return user, password
    return None


def in_url(url: str) -> bool:
    return _userinfo(url) is not None


def lookup(url: str, netrc: bool = True) -> tuple[str, str] | None:
    """(user, password) for the realm of `url`, or None: the URL's own user-info first; a user name
    without a password is completed from the keyring when uv or pip would ask it."""
    realm = _realm(url)
    if realm is None:
        return None
    own = _userinfo(url)
    with _lock:
        given = _given.get(realm)
    found = (
        (own[1] if own else None) or given or _from_env(realm) or (_from_netrc(realm[1]) if netrc else None)
    )
    if found and not found[1]:
        return _from_keyring(url, found[0]) or found
    return found


def request(url: str, headers: dict[str, str] | None = None) -> urllib.request.Request:
    """A request for `url` without its user-info (urllib cannot send it), with the realm's credentials as
    basic auth. The header is not carried over a redirect to another host (add_unredirected_header)."""
    import urllib.request

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
