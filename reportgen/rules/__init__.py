"""The performance helper: rules that turn the analysis into findings.

`RULES` is the explicit registry, one module per rule, in the order of the tuning guide (data quality first,
then single device, then the cluster: slow ranks, links, communication, pipeline, resources). Thresholds are data:
each rule lists its own with defaults; `parse_overrides` reads a TOML file and `--set rule.name=value` items.
"""

from __future__ import annotations

import logging
import math
import tomllib
from typing import Optional

from reportgen import urls
from reportgen.analysis import Analysis
from reportgen.errors import ReportError
from reportgen.rules import (
    aicpu, comm_health, communication_bound, data_pipeline, data_quality, host_bound, host_cpu, late_arrival, memory_pressure,
    mindinsight_parallel, msprof_advisor, operator_conversion, operator_dominant, operator_rank, operator_spread, pipeline_bubble, slow_link,
    policy, slow_rank, stage_imbalance, stalls, step_interval, tail_single,
)
from reportgen.rules import expert_imbalance
from reportgen import i18n
from reportgen.i18n import lazy
from reportgen.rules.base import Finding, Rule
from reportgen.rules.thresholds import threshold_table

log = logging.getLogger("msreport")

RULES: tuple[Rule, ...] = (
    data_quality.RULE,
    step_interval.RULE,
    data_pipeline.RULE,
    host_cpu.RULE,
    tail_single.RULE,
    slow_rank.RULE,
    late_arrival.RULE,
    stalls.RULE,
    slow_link.RULE,
    communication_bound.RULE,
    comm_health.RULE,
    stage_imbalance.RULE,
    expert_imbalance.RULE,
    pipeline_bubble.RULE,
    host_bound.RULE,
    memory_pressure.RULE,
    operator_rank.RULE,
    operator_spread.RULE,
    operator_conversion.RULE,
    aicpu.RULE,
    operator_dominant.RULE,
    mindinsight_parallel.RULE,
    msprof_advisor.RULE,
)

# The severity policy (`rules.policy`): severity from the estimated saving per step or a fault floor; its
# thresholds are data like a rule's, under the id "severity" (`--set severity.warning_share=0.03`).
SEVERITY_ORDER = policy.ORDER  # the policy's scale, critical first


class ThresholdError(ReportError):
    """An unknown rule or threshold, or a value that is not a number."""


def _tables() -> dict[str, dict]:
    """Rule id -> its thresholds (name -> Threshold), the severity policy's under `policy.POLICY_ID`."""
    return {**{r.id: r.thresholds for r in RULES}, policy.POLICY_ID: threshold_table(policy.Policy)}


def default_thresholds() -> dict[str, dict[str, float]]:
    return {rid: {k: t.default for k, t in table.items()} for rid, table in _tables().items()}


# Thresholds that the severity policy replaced (issue 29): still accepted in `--set` and thresholds files, so that a
# CI job's settings keep working, with a warning that they no longer change anything. Name -> what took its place.
RETIRED = {
    ("slow-link", "min_share"): "the severity policy (severity.warning_share) judges the link's saving",
    ("slow-link", "min_lost_ms"): "the severity policy judges the link's saving; severity.link_fault its bandwidth",
    ("stage-imbalance", "min_share"): "the severity policy (severity.warning_share) judges the stage's saving",
    ("comm-health", "comm_matters"): "small packets are judged by their own cost (severity.warning_share)",
}


def _set(out: dict, rule_id: str, name: str, value, origin: str) -> None:
    rules = _tables()
    if (rule_id, name) in RETIRED:
        import logging

        logging.getLogger("msreport").warning("%s: %s.%s no longer exists and is ignored: %s", origin, rule_id, name,
                                              RETIRED[(rule_id, name)])
        return
    if rule_id not in rules:
        raise ThresholdError(f"{origin}: unknown rule {rule_id!r} (rules: {', '.join(sorted(rules))})")
    if name not in rules[rule_id]:
        raise ThresholdError(f"{origin}: rule {rule_id!r} has no threshold {name!r} "
                             f"(it has: {', '.join(rules[rule_id])})")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(float(value)):
        raise ThresholdError(f"{origin}: {rule_id}.{name} must be a number, not {value!r}")
    out.setdefault(rule_id, {})[name] = float(value)


def parse_overrides(toml_text: Optional[str] = None, sets: Optional[list[str]] = None,
                    toml_name: str = "thresholds file") -> dict[str, dict[str, float]]:
    """Overrides from a TOML document (`[rule-id]` tables of `name = number`) and `rule.name=value` items
    (later wins). Raises ThresholdError with a one-line message on anything unknown or not numeric."""
    out: dict[str, dict[str, float]] = {}
    if toml_text is not None:
        try:
            doc = tomllib.loads(toml_text)
        except tomllib.TOMLDecodeError as e:
            raise ThresholdError(f"{toml_name} is not valid TOML: {e}") from None
        for rule_id, table in doc.items():
            if not isinstance(table, dict):
                raise ThresholdError(f"{toml_name}: {rule_id!r} must be a table ([{rule_id}]) of thresholds")
            for name, value in table.items():
                _set(out, rule_id, name, value, toml_name)
    for item in sets or []:
        key, sep, raw = item.partition("=")
        rule_id, dot, name = key.strip().rpartition(".")
        if not sep or not dot:
            raise ThresholdError(f"--set {item!r}: expected RULE.THRESHOLD=VALUE, e.g. slow-rank.min_share=0.03")
        try:
            value = float(raw)
        except ValueError:
            raise ThresholdError(f"--set {item!r}: {raw.strip()!r} is not a number") from None
        _set(out, rule_id, name.strip(), value, "--set")
    return out


def resolved_thresholds(overrides: Optional[dict] = None) -> dict[str, dict[str, float]]:
    values = default_thresholds()
    for rule_id, table in (overrides or {}).items():
        values[rule_id].update(table)
    return values


# Ids findings had before every id became "{rule id}.{sub}": kept in summary.json as `aliases`.
RENAMED = {
    "aicpu.share": "operator-hotspot.aicpu",
    "late-arrival.culprit": "slow-rank.late-arrival",
    "operator-conversion.share": "operator-hotspot.conversion",
    "operator-dominant.type": "operator-hotspot.dominant",
    "operator-rank.slow-on-rank": "operator-hotspot.slow-on-rank",
    "operator-spread.slow-device": "execution.slow-device",
    "operator-spread.long-everywhere": "execution.long-everywhere",
    "tail-single-device.tail": "operator-hotspot.tail",
}

# Readings folded into a finding of ours about the same subject, rather than shown on their own: the reference
# tools' verdicts (rules with `reference=True`), and the timeline's reading of a slow device.
READINGS = ("operator-spread.slow-device",)
# A reading that names the same cause as another rule's finding, from another angle: (reading id, host id).
SAME_CAUSE = {("operator-spread.slow-device", "operator-rank.slow-on-rank")}
REFERENCE_RULES = frozenset(r.id for r in RULES if r.reference)


def _is_reading(f: Finding) -> bool:
    return f.rule in REFERENCE_RULES or f.id in READINGS


def _covers(host: Finding, f: Finding) -> bool:
    if (f.id, host.id) in SAME_CAUSE:  # e.g. the timeline's slow device and the operator table's slow rank
        return set(f.ranks) <= set(host.ranks)
    return (host.category == f.category and host.phase == f.phase
            and set(f.ranks) <= set(host.ranks) and set(f.links) <= set(host.links)
            and set(f.stages) <= set(host.stages))


def _merge(findings: list[Finding]) -> list[Finding]:
    """A reading (a reference tool's verdict, the timeline's slow device) about a subject one of our findings
    already covers (same category and phase, subject contained in ours; an empty subject is contained in any, or a
    SAME_CAUSE pair) is folded into the strongest such finding as related evidence."""
    ours = sorted((f for f in findings if not _is_reading(f)), key=lambda f: SEVERITY_ORDER[f.severity])
    out = []
    for f in findings:
        if _is_reading(f):
            host = next((h for h in ours if _covers(h, f)), None)
            if host is not None:
                host.related.append(f)
                continue
        out.append(f)
    return out


# One cause, two findings, one saving: a rank that is slow in an arrival phase (its work before the step's collectives)
# makes its peers wait, so the late-arrival rule names it too, and both estimates replace the same excess of the same
# rank (`analysis.impact.replace_excess`). The slow-rank finding names the cause; the late arrival's saving is
# included in it (`impact.included_in`), and only what it adds beyond (`impact.additional_step_ms`) ranks it.
ROOT_CAUSE = ("slow-rank", ("step_interval", "compute", "free"))  # (rule, phases) of the findings naming the cause
SAME_SAVING = ("late-arrival",)  # rules whose saving is the cause's, seen from the collectives
SAME_SAVING_MS = 0.05  # a saving beyond the cause's below this (ms per step) is none: noise of the two estimates


def _shared_savings(findings: list[Finding]) -> None:
    """Mark each saving that is the same time as a root-cause finding's saving (same ranks): the cause finding
    keeps its saving, the other says where its saving is counted (`Finding.included_in`), and adds to its impact
    `included_in` (ids) and `additional_step_ms` (its saving beyond theirs, 0 when theirs covers it)."""
    rule, phases = ROOT_CAUSE
    causes = [f for f in findings if f.rule == rule and f.phase in phases and f.impact]
    for f in findings:
        if f.rule not in SAME_SAVING or not f.impact:
            continue
        same = [c for c in causes if set(c.ranks) & set(f.ranks)]
        if not same:
            continue
        beyond = f.saving_ms - sum(c.saving_ms for c in same)
        f.included_in = same
        f.impact = {**f.impact, "included_in": [c.id for c in same],
                    "additional_step_ms": round(beyond, 4) if beyond >= SAME_SAVING_MS else 0.0}


def run_rules(analysis: Analysis, overrides: Optional[dict] = None) -> tuple[list[Finding], dict]:
    """Return (findings ordered by severity, then by estimated saving, thresholds used per rule). Findings stay typed until a page or
    summary.json serialises them (`Finding.to_dict`)."""
    values = resolved_thresholds(overrides)
    pol = policy.Policy(**values[policy.POLICY_ID])
    findings: list[Finding] = []
    order: dict[int, tuple[int, int]] = {}
    for n, rule in enumerate(RULES):
        try:
            # texts are lazy messages rendered later in either language; the values put into them (numbers,
            # percentages) are formatted once, in English style, so `title_en` and the translated title agree
            with i18n.use(i18n.DEFAULT):
                found = rule.check(rule.context(analysis, values[rule.id], pol))
        except Exception as e:  # noqa: BLE001 - one broken rule must not cost the report
            log.warning("rule %s failed: %s: %s", rule.id, type(e).__name__, e)
            found = [Finding(id=f"{rule.id}.failed", category="data_quality", severity="info",
                             title=lazy("The rule {rule} could not run on this data ({error}: {message})", rule=rule.id,
                                        error=type(e).__name__, message=str(e)),
                             advice=lazy("This is a bug in msreport; please report it with the profile's layout."),
                             page=urls.page(urls.RULES))]
        for k, f in enumerate(found):
            if not f.id.startswith(rule.id + "."):
                raise ValueError(f"rule {rule.id} made a finding with id {f.id!r}: ids are '{rule.id}.<sub>'")
            f.rule = rule.id
            if f.id in RENAMED:
                f.aliases.append(RENAMED[f.id])
            policy.apply(f, pol)
            order[id(f)] = (n, k)
            findings.append(f)
    findings = _merge(findings)
    _shared_savings(findings)
    findings.sort(key=lambda f: (SEVERITY_ORDER[f.severity], -f.saving_ms, order[id(f)]))
    return findings, values
