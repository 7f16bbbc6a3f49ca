"""Colour for the status words on a terminal: FAIL red, ERROR magenta, WARN yellow, PASS green, and the
verdict. Never in pipes or files; NO_COLOR (any value, https://no-color.org) turns it off, FORCE_COLOR
(not "0") turns it on where no terminal is (CI logs that render ANSI); `sparkenv --color always|never`
decides before both. Presentation only."""

from __future__ import annotations

import os
import re
from typing import TextIO

from sparkenv.core.report import GOTCHA_PATTERN

_CODES = {"FAIL": "1;31", "ERROR": "1;35", "WARN": "33", "PASS": "32", "SKIP": "2"}
_VERDICT = {"blocked": "1;31", "ready-with-warnings": "33", "ready": "32"}
_LINE = re.compile(rf"^({GOTCHA_PATTERN} )(PASS|FAIL|WARN|SKIP|INFO|ERROR)(:)", re.M)
_VERDICT_LINE = re.compile(r"^(verdict: )(ready-with-warnings|ready|blocked)", re.M)


CHOICES = ("auto", "always", "never")
_choice = "auto"  # `sparkenv --color`: always/never decide before NO_COLOR, FORCE_COLOR and the terminal


def choose(value: str) -> None:
    global _choice
    _choice = value


def wanted(stream: TextIO) -> bool:
    if _choice != "auto":
        return _choice == "always"
    if "NO_COLOR" in os.environ and os.environ["NO_COLOR"] != "":
        return False
    force = os.environ.get("FORCE_COLOR")
    if force is not None and force not in ("", "0"):
        return True
    try:
        return stream.isatty() and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError):
        return False


def _wrap(code: str, text: str) -> str:
    return f"\033[{code}m{text}\033[0m" if code else text


def paint(text: str) -> str:
    text = _LINE.sub(lambda m: m.group(1) + _wrap(_CODES.get(m.group(2), ""), m.group(2)) + m.group(3), text)
    return _VERDICT_LINE.sub(lambda m: m.group(1) + _wrap(_VERDICT[m.group(2)], m.group(2)), text)
