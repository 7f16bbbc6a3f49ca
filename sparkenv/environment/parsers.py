"""Parsers for what the gate's probes read: /proc/meminfo, nvidia-smi CSV, command lines, simple configs.

Pure functions of text, tested against real machine outputs in tests/fixtures.
"""

from __future__ import annotations

import re

_NA = {"", "n/a", "[n/a]", "not supported", "[not supported]", "[unknown error]", "unknown error"}
_UNIT = re.compile(r"^\s*([-+]?\d+(?:\.\d+)?)\s*(?:w|mib|mhz|%|c)?\s*$", re.I)


def parse_meminfo(text: str) -> dict[str, int]:
    """/proc/meminfo -> {"MemTotal": kB, ...}."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        key, sep, rest = line.partition(":")
        if not sep:
            continue
        number = rest.strip().split(" ")[0]
        if number.isdigit():
            out[key.strip()] = int(number)
    return out


def smi_value(raw: str) -> float | str | None:
    """'79.46 W' -> 79.46, '[N/A]' / 'Not Supported' -> None, '0x…' and names stay strings."""
    value = raw.strip()
    if value.lower() in _NA:
        return None
    m = _UNIT.match(value)
    if m:
        number = float(m.group(1))
        return int(number) if number.is_integer() and "." not in m.group(1) else number
    return value


def smi_field(header: str) -> str:
    """'power.draw [W]' -> 'power.draw'."""
    return header.split("[")[0].strip()


def parse_smi_csv(text: str, fields: list[str] | None = None) -> list[dict[str, float | str | None]]:
    """nvidia-smi --format=csv output (with its header line, or headerless when `fields` is given)."""
    rows: list[dict[str, float | str | None]] = []
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    if not lines:
        return rows
    if fields is None:
        fields = [smi_field(h) for h in lines[0].split(",")]
        lines = lines[1:]
    for line in lines:
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(fields):
            continue  # a line of another query or an error message: not ours
        rows.append({f: smi_value(c) for f, c in zip(fields, cells, strict=True)})
    return rows


def option_value(argv: list[str], names: tuple[str, ...]) -> str | None:
    """The value of `--name value` or `--name=value` (either spelling with - or _) in an argv."""
    wanted = {n.replace("_", "-") for n in names}
    for i, arg in enumerate(argv):
        key, eq, value = arg.partition("=")
        if key.replace("_", "-") in wanted:
            if eq:
                return value
            if i + 1 < len(argv):
                return argv[i + 1]
    return None
