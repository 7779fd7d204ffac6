"""The host drill-down of the communication page above 64 ranks (site/comm_views.drill_cells, the comm-drill chart):
rank-level links carried columnar and bounded; the browser part is in tests/test_interactions.py."""

from __future__ import annotations

import json

import pandas as pd
from bs4 import BeautifulSoup

from reportgen.cli import main
from reportgen.site.views import communication as comm_views
def _links(rows):
    return pd.DataFrame(rows, columns=["src", "dst", "time_ms", "size_mb", "transport", "slow", "mapped", "self",
                                       "group"])


def test_drill_cells_sum_a_pairs_groups_and_keep_the_slow_and_slowest_over_the_cap():
    lt = _links([
        (0, 1, 2.0, 64.0, "HCCS", False, True, False, "g0"),
        (0, 1, 1.0, 32.0, "HCCS", False, True, False, "g1"),  # same pair, another group: summed
        (1, 2, 4.0, 16.0, "RDMA", True, True, False, "g0"),  # slow
        (2, 3, 1.0, 64.0, "RDMA", False, True, False, "g0"),
        (3, 3, 1.0, 64.0, "LOCAL", False, True, True, "g0"),  # on-chip copy: left out
        (4, 5, 1.0, 64.0, "HCCS", False, False, False, "g0"),  # group-local ranks: left out
    ])
    cols, n = comm_views.drill_cells(lt)
    c = cols["cells"]
    assert n == 3 and c["fields"] == comm_views.DRILL_FIELDS and c["dicts"]["transport"] == ["HCCS", "RDMA"]
    rows = {(r[0], r[1]): r for r in c["rows"]}
    # 0→1: 3 ms, 96 MB, 32 GB/s (MB/ms = GB/s)
    assert rows[(0, 1)] == [0, 1, 3.0, 96.0, 32.0, 0, 0]
    assert rows[(1, 2)] == [1, 2, 4.0, 16.0, 4.0, 1, 1]
    cols, n = comm_views.drill_cells(lt, cap=2)  # the slow link, then the slowest of the others (0→1 at 32 GB/s)
    assert n == 3 and [(r[0], r[1]) for r in cols["cells"]["rows"]] == [(0, 1), (1, 2)]


def test_communication_page_above_64_ranks_carries_a_bounded_drill_down(tmp_path, monkeypatch):
    from reportgen.synth import generate_run
    run = generate_run(tmp_path / "run", ranks=72, steps=2, ranks_per_host=8)
    from reportgen.site.pages import communication as comm_pages
    monkeypatch.setattr(comm_pages, "drill_cells", lambda lt: comm_views.drill_cells(lt, 40))
    assert main([str(run), "-o", str(tmp_path / "site"), "-q", "--lang", "en"]) == 0
    soup = BeautifulSoup((tmp_path / "site" / "cluster" / "communication.html").read_text(encoding="utf-8"),
                         "html.parser")
    fig = soup.select_one("#fig-comm-drill")
    cols = json.loads(fig.select_one("script.columns").string)["cells"]
    assert len(cols["rows"]) == 40
    n_links = len({(r["src"], r["dst"]) for r in _csv(tmp_path / "site" / "cluster" / "communication-links.csv.gz")})
    assert f"carries 40 of the run's {n_links} links" in fig.figcaption.get_text(" ", strip=True)
    sel = soup.select_one("#comm-drill-selection")
    assert sel["data-max"] == "64" and "{hosts}" in sel["data-some"]
    graph = json.loads(soup.select_one("#fig-comm-graph script.spec").string)
    nodes = graph["datasets"]["nodes"]
    assert len(nodes) == 9 and nodes[0]["members"] == "0,1,2,3,4,5,6,7"


def _csv(path):
    """The mapped links between two devices of the page's link CSV."""
    import csv
    import gzip
    # (a large run's: gzip-compressed)
    with (gzip.open(path, "rt", encoding="utf-8", newline="") if path.suffix == ".gz" else open(path, encoding="utf-8")) as f:
        return [{"src": r["Source"], "dst": r["Destination"]} for r in csv.DictReader(f)
                if r["Global ranks"] == "True" and r["Source"] != r["Destination"]]


def test_a_pairs_transports_are_its_distinct_ones_sorted_and_joined_in_the_matrix_and_drill_down():
    lt = _links([
        (0, 1, 1.0, 8.0, "RDMA", False, True, False, "g0"),
        (0, 1, 1.0, 8.0, "HCCS", False, True, False, "g1"),
        (0, 1, 2.0, 8.0, "RDMA", False, True, False, "g2"),  # a transport twice: named once
        (1, 0, 1.0, 8.0, "HCCS", True, True, False, "g0"),
        (2, 0, 1.0, 8.0, "SIO", False, True, False, "g0"),
        (2, 0, 1.0, 8.0, "HCCS", False, True, False, "g0"),
        (2, 0, 1.0, 8.0, "PCIE", False, True, False, "g1"),
    ])
    # the lambda the views used before, as the reference
    want = lt.groupby(["src", "dst"])["transport"].agg(lambda s: "/".join(sorted(set(s))))
    got = comm_views.joined(lt, ["src", "dst"])
    assert got.sort_index().to_dict() == want.to_dict() == {(0, 1): "HCCS/RDMA", (1, 0): "HCCS",
                                                            (2, 0): "HCCS/PCIE/SIO"}
    cells = {(c["so"], c["do"]): c for c in comm_views.matrix_cells(lt, [0, 1, 2])["cells"]}
    assert cells[(0, 1)]["transport"] == "HCCS/RDMA" and cells[(0, 1)]["time_ms"] == 4.0
    assert cells[(2, 0)]["transport"] == "HCCS/PCIE/SIO" and cells[(1, 0)]["slow"] is True
    assert comm_views.matrix_cells(lt, [0, 1, 2], group="g1")["cells"][1]["transport"] == "PCIE"
    cols, _n = comm_views.drill_cells(lt)
    assert cols["cells"]["dicts"]["transport"] == ["HCCS", "HCCS/PCIE/SIO", "HCCS/RDMA"]


def test_binned_matrix_blocks_name_their_slow_links_in_rank_order_and_every_transport():
    """Above 64 ranks the matrix bins ranks into blocks (130 ranks: blocks of 3): a block sums its links, keeps
    its slowest link's bandwidth, names its slow links in rank order and lists every transport its pairs use."""
    lt = _links([
        (0, 3, 2.0, 8.0, "HCCS", False, True, False, "g0"),
        (1, 4, 1.0, 8.0, "RDMA", True, True, False, "g0"),  # slow
        (0, 5, 1.0, 2.0, "RDMA", True, True, False, "g1"),  # slow, same block
        (0, 5, 1.0, 8.0, "HCCS", False, True, False, "g0"),  # the same pair over another transport
        (2, 4, 4.0, 4.0, "SIO", False, True, False, "g0"),
        (9, 129, 1.0, 1.0, "RDMA", False, True, False, "g0"),  # another block
    ])
    m = comm_views.matrix_cells(lt, list(range(130)))
    assert m["bin"] == 3
    cells = {(c["so"], c["do"]): c for c in m["cells"]}
    assert set(cells) == {(0, 1), (3, 43)}
    c = cells[(0, 1)]
    # pairs 0->3 (2 ms, 8 MB), 1->4 (1, 8), 0->5 (2, 10: two transports), 2->4 (4, 4): 9 ms, 30 MB
    assert c["src"] == "0–2" and c["dst"] == "3–5" and c["time_ms"] == 9.0 and c["size_mb"] == 30.0
    assert c["min_bandwidth_gbps"] == 1.0 and c["slow"] is True  # 2->4: 4 MB over 4 ms
    assert c["slow_links"] == "0→5 1→4" and c["transport"] == "HCCS/RDMA/SIO"
    assert cells[(3, 43)]["slow_links"] == "" and cells[(3, 43)]["transport"] == "RDMA"


def test_the_graphs_circle_is_networkx_circular_layout_to_the_last_bit():
    """`circle` (the communication graph's node positions, without importing networkx) is what networkx's
    `circular_layout` gives, bit for bit, for every count of nodes the page draws: the graph's numbers stay what
    they were."""
    import networkx as nx
    import numpy as np
    for n in [*range(2, 70), 97, 128, 513, 1024, 4096]:
        ours = comm_views.circle(n)
        pos = nx.circular_layout(nx.cycle_graph(n) if n > 2 else nx.path_graph(n))
        theirs = np.array([pos[i] for i in range(n)])
        assert ours.dtype == theirs.dtype and ours.shape == (n, 2)
        assert ours.tobytes() == theirs.tobytes(), n
    assert comm_views.circle(1).tolist() == [[0.0, 0.0]] and comm_views.circle(0).shape == (0, 2)
