"""The one redaction of credentials: nothing sparkenv writes or prints (locks, reports, profiles, logs,
images, error messages) holds the user-info of a URL, the values of its query string, or the value of a
variable whose name says it is a secret (HF_TOKEN=…, "api_key": …). Credentials stay where uv and pip
read them (environment variables, netrc, keyring); sparkenv's own requests find them there
(sparkenv.index.credentials), never in what it wrote."""

from __future__ import annotations

import re

# scheme://user-info@ — user-info ends at the first `@` before any `/`, `?`, `#` or white space
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<info>[^/?#@\s\"'<>]*)@")
# `ssh://git@host` names the account, not a secret: kept, so a VCS requirement still means what it said
_ACCOUNTS = frozenset({"git"})
# a URL's query string: `?` after scheme://host/path, up to a fragment, white space or a quote
_QUERY = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>?#]*\?)(?P<query>[^\s\"'<>#]*)")
_PARAM = re.compile(r"(?P<key>[^&=;]*)=(?P<value>[^&;]*)")
# NAME=value, NAME = "value", "NAME": "value" where a `_`-separated part of NAME says secret
_SECRET_VAR = re.compile(
    # a `_`-separated part of the name says secret: token, secret, password, credentials and the kinds
    # of key that are one (api_key, access_key, private_key), any case; a bare KEY part only in an
    # upper-case variable name (OPENAI_KEY): `stat_key`, `sort_key` in a cache's JSON are not secrets
    r"(?P<name>\b(?:(?i:(?:[a-z0-9]+_)*(?:token|secret|password|passwd|credentials?|api_?key|access_?key"
    r"|private_?key)(?:_[a-z0-9]+)*)|(?:[A-Z0-9]+_)*KEY(?:_[A-Z0-9]+)*))"
    r"(?P<sep>\s*=\s*|[\"']\s*:\s*)"  # `:` only after a quoted name (JSON): "unknown key: x" is a message
    r"(?P<value>\"[^\"\n]*\"|'[^'\n]*'|[^\s\"',;&\x00]+)"
)
_WORDS = ("token", "secret", "passw", "key", "credential")  # what _SECRET_VAR's names hold, lower case
HIDDEN = "***"
# how much of an input line a message may quote
EXCERPT = 120


def _strip(m: re.Match[str]) -> str:
    if m.group("info") in _ACCOUNTS:
        return m.group(0)
    return m.group("scheme")


def _query(m: re.Match[str]) -> str:
    def hide(p: re.Match[str]) -> str:
        return f"{p['key']}={HIDDEN}" if p["value"] else p.group(0)

    return m["head"] + _PARAM.sub(hide, m["query"])


def _value(m: re.Match[str]) -> str:
    value = m["value"]
    if value == HIDDEN or value.strip("\"'") == HIDDEN:
        return m.group(0)
    quote = value[0] if value[0] in "\"'" else ""
    return f"{m['name']}{m['sep']}{quote}{HIDDEN}{quote}"


def redact(text: str) -> str:
    """`text` with every URL's user-info removed (`http://alice:s3cret@host/simple` becomes
    `http://host/simple`, which still works where the credential comes from netrc, keyring or the
    client's environment), every URL query value hidden (`?token=***`) and the value of every variable
    named as a secret hidden (`HF_TOKEN=***`)."""
    if "@" in text:
        text = _USERINFO.sub(_strip, text)
    if "?" in text and "://" in text:
        text = _QUERY.sub(_query, text)
    if any(word in text.lower() for word in _WORDS):
        # only the lines naming a secret word go through the pattern: a lock of thousands of lines
        # (every written file is redacted) costs a lower() and a scan, not a regular expression per word
        text = "\n".join(
            _SECRET_VAR.sub(_value, line) if any(w in line.lower() for w in _WORDS) else line
            for line in text.split("\n")
        )
    return text


def excerpt(line: str, limit: int = EXCERPT) -> str:
    """At most `limit` characters of an input line, redacted, on one line: what a message may quote of
    a file a stranger wrote (`-r /proc/self/environ` made an error print a whole environment)."""
    flat = " ".join(redact(line).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def url_without_secrets(url: str) -> str:
    """A URL sparkenv writes as configuration (a profile's PIP_INDEX_URL): without user-info and without
    a query string, whose parameters are where an index's token travels (`?token=…`)."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return redact(url)
    if not parts.scheme or not parts.netloc:
        return redact(url)
    netloc = parts.netloc.rsplit("@", 1)[1] if "@" in parts.netloc else parts.netloc
    return urlunsplit(parts._replace(netloc=netloc, query=""))
