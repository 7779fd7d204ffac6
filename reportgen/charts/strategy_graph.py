"""The strategy graph of one stage as an inline SVG, generated at build time (no layout code runs in the browser).

Blocks (aggregate scope nodes) sit in columns by layer, left to right in execution order; an edge carries the
number of operator edges between two blocks. Every text comes from the profiler files, so every string is
escaped here. Hovering a block shows its counts (`<title>`); clicking one opens its operator list (report.js).
"""

from __future__ import annotations

from reportgen.i18n import _

from html import escape

W, H, GX, GY, PAD, ARC = 190, 62, 70, 18, 16, 90
COLORS = {"sharded": "#4c78a8", "redistribution": "#e45756", "gradient": "#f58518", "pipe": "#54a24b"}


def _short(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def stage_svg(stage: int, blocks: list, edges: list[tuple[str, str, int]]) -> str:
    """`blocks`: analysis.strategy.Block (layer, pos, counts); `edges`: (from key, to key, operator edges)."""
    if not blocks:
        return ""
    layer = {b.key: b.layer for b in blocks}
    back = any(a in layer and b in layer and layer[b] <= layer[a] for a, b, _ in edges)
    top = PAD + (ARC if back else 0)  # head room for the arcs of back edges
    pos = {b.key: (PAD + b.layer * (W + GX), top + b.pos * (H + GY)) for b in blocks}
    width = PAD * 2 + (max(b.layer for b in blocks) + 1) * (W + GX) - GX
    height = top + PAD + (max(b.pos for b in blocks) + 1) * (H + GY) - GY
    graph_label = escape(_("Stage {stage} computational graph").format(stage=stage))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="strategy-graph" viewBox="0 0 {width} {height}" '
           f'width="{width}" height="{height}" role="img" aria-label="{graph_label}">',
           '<defs><marker id="arrow-s{0}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" markerHeight="6" '
           'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#8a94a6"/></marker></defs>'.format(stage)]
    most = max((c for *_, c in edges), default=1)
    for a, b, c in edges:
        if a not in pos or b not in pos:
            continue
        (x1, y1), (x2, y2) = pos[a], pos[b]
        sw = 0.8 + 3.2 * (c / most) ** 0.5
        if x2 > x1:
            sx, sy, ex, ey = x1 + W, y1 + H / 2, x2, y2 + H / 2
            d = f"M{sx:.0f},{sy:.0f} C{sx + GX / 2:.0f},{sy:.0f} {ex - GX / 2:.0f},{ey:.0f} {ex:.0f},{ey:.0f}"
            cls = "edge"
        else:  # back edge (a cycle between scopes): a dashed arc above
            sx, sy, ex, ey = x1 + W / 2, y1, x2 + W / 2, y2
            lift = min(ARC, 30 + abs(x1 - x2) / 12) + (y1 - PAD - ARC)
            d = f"M{sx:.0f},{sy:.0f} C{sx:.0f},{sy - lift:.0f} {ex:.0f},{ey - lift:.0f} {ex:.0f},{ey:.0f}"
            cls = "edge back"
        edges = escape(_("{n} operator edge(s)").format(n=c))
        out.append(f'<path class="{cls}" d="{d}" stroke-width="{sw:.1f}" marker-end="url(#arrow-s{stage})">'
                   f'<title>{escape(a)} → {escape(b)}: {edges}</title></path>')
    for i, b in enumerate(blocks):
        x, y = pos[b.key]
        types = ", ".join(f"{escape(t)} ×{n}" for t, n in b.types)
        tip = (f"{escape(b.key)}\n" + escape(_(
            "{n} operator(s); {sharded} with a sharding strategy ({split} split); {redis} redistribution; {grad} "
            "gradient aggregation; {send} Send, {receive} Receive").format(
                n=b.n_ops, sharded=b.sharded, split=b.split, redis=b.redistribution, grad=b.gradient_aggregation,
                send=b.send, receive=b.receive)) + f"\n{types}")
        sub = escape(_("{n} ops · {k} sharded").format(n=b.n_ops, k=b.sharded))
        out.append(f'<g class="block" tabindex="0" data-block="s{stage}-b{i}" transform="translate({x},{y})">'
                   f'<title>{tip}</title>'
                   f'<rect width="{W}" height="{H}" rx="6"/>'
                   f'<text x="8" y="17" class="label">{escape(_short(b.label, 28))}</text>'
                   f'<text x="8" y="34" class="sub">{sub}</text>')
        badges = [(b.redistribution, "R", COLORS["redistribution"]), (b.gradient_aggregation, "G", COLORS["gradient"]),
                  (b.send + b.receive, "P", COLORS["pipe"])]
        bx = 8
        for n, letter, color in badges:
            if n:
                txt = f"{letter} {n}"
                w = 10 + 7 * len(txt)
                out.append(f'<rect x="{bx}" y="42" width="{w}" height="14" rx="7" fill="{color}"/>'
                           f'<text x="{bx + w / 2}" y="53" class="badge-t">{escape(txt)}</text>')
                bx += w + 4
        if b.sharded:
            frac = b.sharded / max(1, b.n_ops)
            out.append(f'<rect x="0" y="{H - 3}" width="{W * frac:.1f}" height="3" fill="{COLORS["sharded"]}"/>')
        out.append("</g>")
    out.append("</svg>")
    return "".join(out)
