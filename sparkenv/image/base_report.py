"""The image stage's findings about its base: the facts base_check.py printed inside the image, judged by the
registry (rules/g9.py, Stage.IMAGE). A failed base check is a report like every stage's (rendered by the
same renderers, honouring --format), not lines inside an error message."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from sparkenv import rules
from sparkenv.facts.image import parse

if TYPE_CHECKING:
    from sparkenv.core.report import Finding


def findings(lines: Iterable[str]) -> list[Finding]:
    """The registry's findings for the facts in a step's log, sorted as reports sort them; [] when the
    log holds no facts line."""
    facts = parse(lines)
    if facts is None:
        return []

    return sorted(rules.evaluate(rules.Stage.IMAGE, facts), key=lambda f: f.sort_key())
