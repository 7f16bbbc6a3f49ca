"""The image stage's findings about its base: the facts base_check.py printed inside the image, judged by the
registry (rules/g9.py, Stage.IMAGE) and rendered as every report renders them."""

from __future__ import annotations

from collections.abc import Iterable

from sparkenv.facts.image import parse


def finding_lines(lines: Iterable[str]) -> list[str]:
    """The registry's lines for the facts in a step's log (problems only), as every report prints them."""
    facts = parse(lines)
    if facts is None:
        return []
    from sparkenv import rules
    from sparkenv.render.text import finding_line
    from sparkenv.report import Status

    found = rules.evaluate(rules.Stage.IMAGE, facts)
    return [finding_line(f) for f in sorted(found, key=lambda f: f.sort_key()) if f.status is not Status.PASS]
