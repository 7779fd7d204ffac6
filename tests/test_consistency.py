"""Issue 16, "numbers that cannot be true are caught, and pages agree": one source of truth per number, the
synthetic generator's files describe the same time, impossible values in real data become data-quality notes,
and host CPU averages equal MindSpore Insight's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from reportgen.cli import main
from tests.conftest import sample


def _ms(text: str) -> float:
    return float(re.search(r"-?[\d,]+(?:\.\d+)?", text).group(0).replace(",", ""))


# --- two pages, one number ---------------------------------------------------------------------------


def test_rank_page_and_execution_page_show_the_same_communication(tmp_path):
    """MindSpore CPU traces put AllReduce-opN in the "CPU OP" process: the rank page's timeline summary used to
    count it as computation (communication 0 ms) while the execution page, from the same trace, said 2,749 ms."""
    out = tmp_path / "rep"
    assert main([str(sample("real/mindspore_cpu_dist4_new_graph_skew")), "-o", str(out), "-q"]) in (0, 3)
    ex = BeautifulSoup((out / "cluster" / "execution.html").read_text(encoding="utf-8"), "html.parser")
    checked = 0
    for r in range(4):
        row = ex.find("tr", id=f"marey-rank-{r}")
        cells = row.find_all("td")
        compute_ex, comm_ex = _ms(cells[5].get_text()), _ms(cells[6].get_text())
        page = BeautifulSoup((out / "ranks" / f"rank-{r}.html").read_text(encoding="utf-8"), "html.parser")
        facts = {th.get_text(strip=True): td.get_text(" ", strip=True)
                 for th, td in (tr.find_all(["th", "td"])[:2] for tr in page.find(id="rank-timeline-summary")("tr"))}
        # the execution view covers the whole profiled window here (the traces mark no steps): same window
        assert _ms(facts["Merged communication"]) == pytest.approx(comm_ex, abs=0.01)
        assert _ms(facts["Merged computation"]) == pytest.approx(compute_ex, abs=0.01)
        checked += 1
    assert checked == 4
    assert comm_ex == pytest.approx(2749.359, abs=0.01)  # rank 3, read from the trace by hand: Σ AllReduce-op* dur
