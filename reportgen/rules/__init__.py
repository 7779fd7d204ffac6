"""The performance helper: rules that turn the analysis into findings.

`RULES` is the explicit registry (one module per rule). It is empty in this version: the rules of the tuning
guide are not implemented yet, so the report states that no findings were computed rather than
pretending a run is healthy.
"""

from __future__ import annotations

from reportgen.analysis import Analysis

RULES: tuple = ()


def run_rules(analysis: Analysis, overrides: dict | None = None) -> tuple[list[dict], dict]:
    """Return (findings as summary.json dicts ordered by severity, thresholds used)."""
    findings: list[dict] = []
    thresholds: dict = {}
    for rule in RULES:  # pragma: no cover - no rules yet
        findings.extend(rule.check(analysis, overrides or {}))
        thresholds.update(rule.thresholds(overrides or {}))
    order = {"critical": 0, "warning": 1, "info": 2}
    findings.sort(key=lambda f: (order.get(f["severity"], 3), f["id"]))
    return findings, thresholds
