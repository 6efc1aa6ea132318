"""A small layered layout for per-function call graphs (no graphviz, no system tools).

Layers are given by the caller (callers at -1, the function at 0, callees at 1, 2, ...);
within a layer nodes are ordered by a few barycentre sweeps (the Sugiyama heuristic) to cut
crossings; columns are placed left to right and centred vertically; edges are cubic curves
from the right side of the source to the left side of the target. The result is data
(`model.CallGraph`); the `graph` macro draws it as inline SVG.
"""

from __future__ import annotations

from dataclasses import dataclass

from site_builder.model import CallGraph, GraphEdge, GraphNode

CHAR_W = 7.0  # px per character of the 12px monospace label
NODE_H = 22.0
PAD_X = 8.0
GAP_Y = 8.0
GAP_X = 46.0
MARGIN = 6.0
MAX_PER_LAYER = 9
SWEEPS = 4


@dataclass(frozen=True)
class GNode:
    id: str
    label: str
    title: str
    href: str | None
    role: str
    layer: int
    # Which nodes survive when a layer overflows: lower first. The page model sets it so that
    # annotated and linkable functions (compute_qk) win over intrinsics (__powf, cg::this_grid).
    rank: int = 0


Edge = tuple[str, str, str]  # (src id, dst id, kind)


def layout(nodes: list[GNode], edges: list[Edge]) -> CallGraph:
    """Place `nodes` (unique ids) and route `edges` (src id, dst id, kind): fold overflowing
    layers, keep the edges between neighbouring layers, order each layer, place, route."""
    by_layer: dict[int, list[GNode]] = {}
    for n in nodes:
        by_layer.setdefault(n.layer, []).append(n)
    layers = sorted(by_layer)
    edges = _fold(by_layer, layers, edges)
    edges = _layered(by_layer, layers, edges)
    # A node whose only links were through a folded node would float unconnected: drop it.
    linked = {x for e in edges for x in e[:2]}
    for ly in layers:
        by_layer[ly] = [n for n in by_layer[ly] if n.id in linked or n.role == "self" or len(nodes) == 1]
    layers = [ly for ly in layers if by_layer[ly]]
    _order(by_layer, layers, edges)
    placed, width, total_h = _place(by_layer, layers)
    out_edges, back_edges = _route(placed, edges)
    height = total_h + 2 * MARGIN + (28 if back_edges else 0)
    return CallGraph(round(width, 1), round(height, 1), tuple(placed.values()), tuple(out_edges))


def _fold(by_layer: dict[int, list[GNode]], layers: list[int], edges: list[Edge]) -> list[Edge]:
    """Keep each layer readable: fold the overflow (highest rank first) into one "+N more" node."""
    for ly in layers:
        col = sorted(by_layer[ly], key=lambda n: n.label)
        if len(col) > MAX_PER_LAYER:
            by_rank = sorted(col, key=lambda n: (n.rank, n.label))
            keep_ids = {n.id for n in by_rank[: MAX_PER_LAYER - 1]}
            kept = [n for n in col if n.id in keep_ids]
            rest = [n for n in by_rank if n.id not in keep_ids]
            more = GNode(f"more:{ly}", f"+{len(rest)} more", ", ".join(n.label for n in rest[:20]),
                         None, "more", ly)
            gone = {n.id for n in rest}
            edges = [(more.id if s in gone else s, more.id if d in gone else d, k) for s, d, k in edges]
            col = kept + [more]
        by_layer[ly] = col
    return edges


def _layered(by_layer: dict[int, list[GNode]], layers: list[int], edges: list[Edge]) -> list[Edge]:
    """Keep the picture layered: only edges from one layer to the next (callers -> function ->
    callees -> their callees); none out of a callee-side "+N more" node. Edges inside a layer or
    backwards (recursion, callees calling each other) would cut through the columns."""
    layer_of = {n.id: ly for ly in layers for n in by_layer[ly]}
    return list(dict.fromkeys(
        e for e in edges
        if e[0] in layer_of and e[1] in layer_of and layer_of[e[1]] == layer_of[e[0]] + 1
        and not (e[0].startswith("more:") and layer_of[e[0]] > 0)))


def _order(by_layer: dict[int, list[GNode]], layers: list[int], edges: list[Edge]) -> None:
    """A few barycentre sweeps, down and up, to cut crossings (in place)."""
    neighbours: dict[str, list[str]] = {}
    for s, d, _ in edges:
        neighbours.setdefault(s, []).append(d)
        neighbours.setdefault(d, []).append(s)
    order = {n.id: i for ly in layers for i, n in enumerate(by_layer[ly])}
    layer_of = {n.id: ly for ly in layers for n in by_layer[ly]}
    for sweep in range(SWEEPS):
        seq = layers if sweep % 2 == 0 else list(reversed(layers))
        for ly in seq:
            def bary(n: GNode) -> float:
                ps = [order[m] for m in neighbours.get(n.id, ()) if m in order and layer_of[m] != ly]
                return sum(ps) / len(ps) if ps else order[n.id]

            col = sorted(by_layer[ly], key=lambda n: (bary(n), n.label))
            by_layer[ly] = col
            for i, n in enumerate(col):
                order[n.id] = i


def _place(by_layer: dict[int, list[GNode]], layers: list[int]) -> tuple[dict[str, GraphNode], float, float]:
    """Columns left to right, each centred vertically: (nodes by id, width, tallest column)."""
    widths = {ly: max(len(n.label) for n in by_layer[ly]) * CHAR_W + 2 * PAD_X for ly in layers}
    heights = {ly: len(by_layer[ly]) * (NODE_H + GAP_Y) - GAP_Y for ly in layers}
    total_h = max(heights.values()) if heights else NODE_H
    placed: dict[str, GraphNode] = {}
    x = MARGIN
    for ly in layers:
        y = MARGIN + (total_h - heights[ly]) / 2
        for n in by_layer[ly]:
            w = len(n.label) * CHAR_W + 2 * PAD_X
            placed[n.id] = GraphNode(n.label, n.title, n.href, n.role, round(x + (widths[ly] - w) / 2, 1),
                                     round(y, 1), round(w, 1), NODE_H)
            y += NODE_H + GAP_Y
        x += widths[ly] + GAP_X
    width = x - GAP_X + MARGIN if layers else 2 * MARGIN
    return placed, width, total_h


def _route(placed: dict[str, GraphNode], edges: list[Edge]) -> tuple[list[GraphEdge], bool]:
    """Cubic curves from the right side of the source to the left side of the target; a back
    edge loops around below. (edges, whether any looped)."""
    out_edges = []
    back_edges = False
    for s, d, kind in edges:
        a, b = placed.get(s), placed.get(d)
        if a is None or b is None:
            continue
        x1, y1 = a.x + a.w, a.y + a.h / 2
        x2, y2 = b.x, b.y + b.h / 2
        if x2 <= x1:  # a back edge (recursion through a caller): loop around below
            x1, x2 = a.x + a.w / 2, b.x + b.w / 2
            y1, y2 = a.y + a.h, b.y + b.h
            c = max(y1, y2) + 24
            back_edges = True
            d_ = f"M{x1:.1f},{y1:.1f} C{x1:.1f},{c:.1f} {x2:.1f},{c:.1f} {x2:.1f},{y2:.1f}"
        else:
            mx = (x1 + x2) / 2
            d_ = f"M{x1:.1f},{y1:.1f} C{mx:.1f},{y1:.1f} {mx:.1f},{y2:.1f} {x2:.1f},{y2:.1f}"
        out_edges.append(GraphEdge(d_, kind))
    return out_edges, back_edges
