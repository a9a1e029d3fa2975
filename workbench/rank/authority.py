"""Citation authority: PageRank over fragment links (networkx, imported lazily)."""

from __future__ import annotations

from typing import Iterable


def pagerank(nodes: Iterable[str], edges: Iterable[tuple[str, str]], *, alpha: float = 0.85,
             source_edges: Iterable[tuple[str, str]] = ()) -> dict[str, tuple[float, int, int]]:
    """node → (PageRank, in-degree, out-degree) over fragment → fragment links (edges to
    unknown nodes are ignored) and fragment → source references (``source_edges``, whose
    targets become source nodes, named ``source:REPO/PATH``)."""
    import networkx as nx

    graph = nx.DiGraph()
    graph.add_nodes_from(nodes)
    graph.add_edges_from((a, b) for a, b in edges if a in graph and b in graph and a != b)
    graph.add_edges_from((a, b) for a, b in source_edges if a in graph)
    if graph.number_of_nodes() == 0:
        return {}
    ranks = nx.pagerank(graph, alpha=alpha)
    return {n: (float(ranks[n]), graph.in_degree(n), graph.out_degree(n)) for n in graph.nodes}
