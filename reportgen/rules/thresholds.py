"""Thresholds as data, for every rule and for the severity policy: `th` declares one field of a frozen
`Thresholds` dataclass with its default and meaning (unit, origin); `threshold_table` reads them back for the rules
page and the overrides (`--set rule.name=value`). Its own module because both `base` (a rule's thresholds) and
`policy` (the policy's) declare them, and `base` applies the policy: neither imports the other for it."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any


@dataclass(frozen=True)
class Threshold:
    default: float
    doc: str  # what it means, with its unit and where the default comes from


def th(default: float, doc: str) -> Any:
    """One threshold of a rule's frozen `Thresholds` dataclass: its default and what it means (unit, origin).
    Rules read it as `ctx.t.name`; a misspelt name is an AttributeError, never a silent default."""
    return field(default=float(default), metadata={"doc": doc})


def threshold_table(params: type) -> dict[str, Threshold]:
    """name -> Threshold(default, doc) of a rule's `Thresholds` dataclass (the rules page, overrides)."""
    return {f.name: Threshold(f.default, f.metadata.get("doc", "")) for f in fields(params)}
