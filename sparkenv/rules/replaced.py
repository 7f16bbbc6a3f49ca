"""A base package replaced on purpose (`sparkenv lock --allow-replace NAME`): the FAIL a declared rule
gives a pin that replaces what the base provides (G2's flash-attn, G9's pins) becomes INFO, inside each
of those rules, so every stage that runs them sees the same verdict."""

from __future__ import annotations

from sparkenv.core.report import Finding, GotchaId, Status


def replaced_on_purpose(findings: list[Finding], allowed: frozenset[str]) -> list[Finding]:
    """A declared pin on a base package named by `sparkenv lock --allow-replace` replaces it on purpose:
    the FAIL of any declared rule that judged it replacing the base (G2's flash-attn, G9's pins) is INFO."""
    out = []
    for f in findings:
        if f.subject in allowed and f.status is Status.FAIL and f.id in (GotchaId.G2, GotchaId.G9):
            f = Finding(
                id=f.id,
                status=Status.INFO,
                summary=f"{f.summary} — replaced on purpose (--allow-replace {f.subject}); resolved like any "
                "package",
                subject=f.subject,
                evidence=f.evidence,
            )
        out.append(f)
    return out
