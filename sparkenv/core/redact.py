"""The one redaction of credentials: nothing sparkenv writes (locks, reports, logs, images) holds the
user-info of a URL. Credentials stay where uv and pip read them (environment variables, netrc, keyring);
sparkenv's own requests find them there (sparkenv.index.credentials), never in what it wrote."""

from __future__ import annotations

import re

# scheme://user-info@ — user-info ends at the first `@` before any `/`, `?`, `#` or white space
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<info>[^/?#@\s\"'<>]*)@")
# `ssh://git@host` names the account, not a secret: kept, so a VCS requirement still means what it said
_ACCOUNTS = frozenset({"git"})


def _strip(m: re.Match[str]) -> str:
    if m.group("info") in _ACCOUNTS:
        return m.group(0)
    return m.group("scheme")


def redact(text: str) -> str:
    """`text` with the user-info (user, password, token) of every URL in it removed:
    `http://alice:s3cret@host/simple` becomes `http://host/simple`, which still works where the
    credential comes from netrc, keyring or the client's environment."""
    return _USERINFO.sub(_strip, text) if "@" in text else text
