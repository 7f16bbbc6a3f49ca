"""Waivers: accept one finding on purpose, with a reason, until a date — `.sparkenv-waivers.toml` in the
working directory (or `--waivers FILE`) and `--waive G4:subject` on the command line.

```toml
[[waiver]]
id = "G9"                 # the G-number
subject = "torch"         # the finding's subject, as in the JSON report ("*" for every subject)
reason = "NGC torch is replaced on purpose for the nightly; tracked in #123"
expires = 2027-01-31      # optional; after that day the waiver fails the run
```

A waived FAIL, WARN or ERROR becomes an INFO line that says it was waived, why and until when, so it
no longer fails the run but stays visible. An expired waiver leaves its finding as it is and adds a FAIL
of its own (a waiver is a debt with a date). A waiver that matches nothing is reported as INFO, so stale
ones get noticed. (Modelled on pip-audit's --ignore-vuln, with the reason and expiry it lacks.)
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass, replace
from pathlib import Path

from sparkenv.core.errors import SparkenvError
from sparkenv.core.report import GOTCHA_PATTERN, Finding, GotchaId, Report, Status

DEFAULT_FILE = ".sparkenv-waivers.toml"
_WAIVE_RE = re.compile(rf"({GOTCHA_PATTERN}):(.+)")
_WAIVABLE = (Status.FAIL, Status.WARN, Status.ERROR)


@dataclass(frozen=True)
class Waiver:
    id: str
    subject: str
    reason: str
    expires: datetime.date | None
    origin: str  # "FILE:entry N" or "--waive"

    def matches(self, f: Finding) -> bool:
        return f.id == self.id and (self.subject == "*" or f.subject == self.subject)

    def until(self) -> str:
        return f"until {self.expires.isoformat()}" if self.expires else "no expiry"


def from_option(text: str) -> Waiver:
    m = _WAIVE_RE.fullmatch(text.strip())
    if not m:
        raise SparkenvError(f"--waive {text}: expected G<number>:<subject>, e.g. --waive G9:torch")
    return Waiver(m.group(1), m.group(2).strip(), "waived on the command line (--waive)", None, "--waive")


def read_file(path: Path, required: bool) -> list[Waiver]:
    """The waivers of a file; a missing default file is no waivers, a named one must exist."""
    from sparkenv.core import safe_read
    from sparkenv.core.datafiles import parse_user_toml

    if not path.exists() and not required:
        return []
    try:
        text = safe_read.read_text(path, what="a waivers file", limit=1 << 20)
    except safe_read.UnreadableFile as exc:
        raise SparkenvError(f"{path}: cannot read waivers file: {exc.reason}") from None
    data = parse_user_toml(text, path)
    entries = data.get("waiver", [])
    unknown = sorted(set(data) - {"waiver"})
    if unknown or not isinstance(entries, list):
        raise SparkenvError(
            f"{path}: expected [[waiver]] tables only (found {', '.join(unknown) or 'waiver'})"
        )
    out = []
    for n, entry in enumerate(entries, 1):
        where = f"{path}: waiver {n}"
        if not isinstance(entry, dict):
            raise SparkenvError(f"{where}: not a table")
        extra = sorted(set(entry) - {"id", "subject", "reason", "expires"})
        if extra:
            raise SparkenvError(f"{where}: unknown key {extra[0]!r} (id, subject, reason, expires)")
        for key in ("id", "subject", "reason"):
            if not isinstance(entry.get(key), str) or not entry[key].strip():
                raise SparkenvError(f"{where}: {key} must be a non-empty string")
        if not re.fullmatch(GOTCHA_PATTERN, entry["id"]):
            raise SparkenvError(f"{where}: id {entry['id']!r} is not {GotchaId.span()}")
        out.append(
            Waiver(entry["id"], entry["subject"], entry["reason"], _date(entry.get("expires"), where), where)
        )
    return out


def _date(value: object, where: str) -> datetime.date | None:
    if value is None:
        return None
    if isinstance(value, datetime.datetime):
        return value.date()
    if isinstance(value, datetime.date):
        return value
    if isinstance(value, str):
        try:
            return datetime.date.fromisoformat(value)
        except ValueError:
            pass
    raise SparkenvError(f"{where}: expires must be a date (2027-01-31), not {value!r}")


def load(waivers_file: str | None, waive: list[str] | None) -> list[Waiver]:
    path = Path(waivers_file) if waivers_file else Path(DEFAULT_FILE)
    return [*read_file(path, required=waivers_file is not None), *(from_option(w) for w in waive or [])]


def apply(report: Report, waivers: list[Waiver], today: datetime.date | None = None) -> Report:
    """The report with waived findings turned to INFO, expired waivers as FAILs, unused ones as INFO."""
    if not waivers:
        return report
    today = today or datetime.date.today()
    used: set[int] = set()
    findings: list[Finding] = []
    extra: list[Finding] = []
    for f in report.findings:
        hit = next((i for i, w in enumerate(waivers) if w.matches(f)), None)
        if hit is None or f.status not in _WAIVABLE:
            if hit is not None:
                used.add(hit)
            findings.append(f)
            continue
        used.add(hit)
        w = waivers[hit]
        if w.expires is not None and w.expires < today:
            findings.append(f)
            extra.append(
                Finding(
                    id=f.id,
                    status=Status.FAIL,
                    summary=f"the waiver of {f.id} {f.subject} expired on {w.expires.isoformat()} "
                    f"({w.origin}: {w.reason})",
                    subject=f"waiver:{f.subject}",
                    evidence=(w.origin,),
                    fix=f"fix the finding, or renew the waiver's expires in {w.origin.split(': waiver')[0]}",
                )
            )
            continue
        findings.append(
            replace(
                f,
                status=Status.INFO,
                summary=f"waived {f.status.value}: {f.summary} — {w.reason} ({w.origin}, {w.until()})",
                evidence=(*f.evidence, f"waived by {w.origin}: {w.reason}"),
            )
        )
    for i, w in enumerate(waivers):
        if i not in used:
            extra.append(
                Finding(
                    id=w.id,
                    status=Status.INFO,
                    summary=f"waiver for {w.id} {w.subject} matches no finding ({w.origin}): remove it if "
                    "stale",
                    subject=f"waiver:{w.subject}",
                    evidence=(w.origin,),
                )
            )
    return replace(report, findings=[*findings, *extra])
