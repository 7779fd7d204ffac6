"""Idle time by cause (`reportgen.idle`) for the pages: its columns and basis texts (the rank page's section,
`pages.rank.idle_section`) and the overview's rows."""

from __future__ import annotations

from reportgen.analysis import Analysis
from reportgen.idle import run_idle
from reportgen.i18n import N_
from reportgen.site.views.values import num

COLUMNS = (("step_ms", N_("Step (ms)")), ("computing_ms", N_("Computing (ms)")), ("idle_ms", N_("Idle (ms)")),
           ("communication_ms", N_("Communication alone (ms)")), ("host_wait_ms", N_("Host wait (ms)")),
           ("host_wait_comm_ms", N_("of which in collectives (ms)")), ("stream_wait_ms", N_("Stream wait (ms)")), ("stream_wait_comm_ms", N_("of which collectives pending (ms)")),
           ("other_ms", N_("Other (ms)")))
BASIS = {"kernels": N_("the GPU kernels and the host calls that launched them, every step"),
         "host dispatch": N_("the device operators and the host dispatch that launched them, in the steps of the "
                             "execution view")}


CAUSES = (("communication_ms", N_("Communication alone")), ("host_wait_ms", N_("Host wait")),
          ("host_wait_comm_ms", N_("of which in collectives")), ("stream_wait_ms", N_("Stream wait")), ("stream_wait_comm_ms", N_("of which collectives pending")),
          ("other_ms", N_("Other")))


def overview_idle(a: Analysis) -> list[dict]:
    """The overview's rows: per cause, the median over ranks (ms per step and share of the step) and the rank
    with the most, linked to its page."""
    from reportgen import urls

    idle = run_idle(a.run)
    means = {r: b.mean() for r, b in idle.items() if len(b.steps)}
    means = {r: m for r, m in means.items() if m.get("step_ms", 0) > 0}
    if not means:
        return []
    out = []
    for key, label in CAUSES:
        vals = sorted((m[key], r) for r, m in means.items())
        shares = sorted(m[key] / m["step_ms"] for m in means.values())
        top_v, top_r = vals[-1]
        out.append({"label": label, "median_ms": num(vals[len(vals) // 2][0] if len(vals) % 2 else
                                                     (vals[len(vals) // 2 - 1][0] + vals[len(vals) // 2][0]) / 2),
                    "share": num(shares[len(shares) // 2] if len(shares) % 2 else
                                 (shares[len(shares) // 2 - 1] + shares[len(shares) // 2]) / 2),
                    "max_ms": num(top_v), "max_rank": top_r, "href": str(urls.rank(top_r, "idle"))})
    return out
