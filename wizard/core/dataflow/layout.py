"""How the stages of a dataflow graph are drawn: node metrics, a layered deterministic auto-layout, and the
one line under each stage's title that says what it is set to.

The layers (columns) wrap onto rows like lines of text when one row would be much wider than the canvas is
(about 1.6 : 1 beside the stage inspector at the window's first size): the canvas then draws the step at a
size that can be read without zooming. A link into a later row leaves its stage to the right, runs in the
gap between the rows and enters its stage from the left.

Geometry is plain tuples in scene units (as orange-canvas-core keeps it in its model), so the GUI
draws exactly what the core computed and the layout is testable without Qt.
"""

from __future__ import annotations

from wizard.core.dataflow.graph import (
    ESTIMATOR_NOTES,
    KINDS,
    ORDER,
    REWARD_TITLES,
    Graph,
    canonical_links,
    is_group_estimator,
)

# Sized for the canvas's words at 9-10 pt (the GUI's items.py): the widest title and port row fit NODE_W.
NODE_W = 164.0
HEADER_H = 38.0  # title line + variant line
ROW_H = 18.0  # one port row
FOOT_H = 6.0
COLUMN_GAP = 40.0  # room for the link curves between columns
ROW_GAP = 14.0  # between the stages of one column
WRAP_GAP = 42.0  # between two rows of columns: room for the links that run on to the next row
CANVAS_ASPECT = 1.6  # width : height of the canvas the rows are wrapped for


def node_height(kind: str) -> float:
    spec = KINDS[kind]
    return HEADER_H + ROW_H * max(len(spec.inputs), len(spec.outputs), 1) + FOOT_H


def port_offset(kind: str, port: str) -> tuple[float, float]:
    """Centre of a port relative to the node's top-left corner: inputs on the left edge, outputs on the right."""
    spec = KINDS[kind]
    for i, p in enumerate(spec.inputs):
        if p.name == port:
            return 0.0, HEADER_H + ROW_H * i + ROW_H / 2
    for i, p in enumerate(spec.outputs):
        if p.name == port:
            return NODE_W, HEADER_H + ROW_H * i + ROW_H / 2
    raise KeyError(f"{kind} has no port {port!r}")


def layers(graph: Graph) -> dict[str, int]:
    """Column of each node: one after the last stage that feeds it in verl's step, empty columns closed up.

    The layout follows the stages present and verl's wiring of them, not the links drawn, so cutting
    or re-drawing a link never moves a stage.
    """
    links = canonical_links(graph)
    fed = {lk.dst.node for lk in links}
    layer = {n.id: 0 if n.id in fed else KINDS[n.id].rank for n in graph.nodes}
    for _ in range(len(layer)):  # longest path by relaxation
        changed = False
        for lk in links:
            if lk.src.node in layer and lk.dst.node in layer and layer[lk.dst.node] < layer[lk.src.node] + 1:
                layer[lk.dst.node] = layer[lk.src.node] + 1
                changed = True
        if not changed:
            break
    used = sorted(set(layer.values()))
    return {node: used.index(col) for node, col in layer.items()}


def auto_layout(graph: Graph) -> dict[str, tuple[float, float]]:
    """Top-left corner of every node: columns by :func:`layers`, wrapped onto rows (:func:`row_count`); within a
    row every column is centred on the row's tallest one; within a column, stages sit in the order of what feeds
    them (fewer crossing links), ties in the step's order."""
    links = canonical_links(graph)
    cols: dict[int, list[str]] = {}
    for node, col in layers(graph).items():
        cols.setdefault(col, []).append(node)
    heights = {c: sum(node_height(n) for n in ns) + ROW_GAP * (len(ns) - 1) for c, ns in cols.items()}
    per_row = -(-len(cols) // row_count(list(heights.values()))) if cols else 1
    out: dict[str, tuple[float, float]] = {}
    centre: dict[str, float] = {}
    top = 0.0
    for first in range(0, len(cols), per_row):
        row = sorted(cols)[first:first + per_row]
        tallest = max(heights[c] for c in row)
        for i, col in enumerate(row):
            nodes = sorted(cols[col], key=lambda n: (_feeders_centre(links, n, centre), ORDER[n]))
            y = top + (tallest - heights[col]) / 2
            for node in nodes:
                out[node] = (i * (NODE_W + COLUMN_GAP), round(y, 1))
                centre[node] = y + node_height(node) / 2
                y += node_height(node) + ROW_GAP
        top += tallest + WRAP_GAP
    return out


def row_count(heights: list[float]) -> int:
    """How many rows the columns (of these heights) wrap onto: the count whose drawing is shaped most like the
    canvas (:data:`CANVAS_ASPECT`), so that fitting it wastes the least room."""
    best, best_rows = float("inf"), 1
    for rows in range(1, len(heights) + 1):
        per_row = -(-len(heights) // rows)
        chunks = [heights[i:i + per_row] for i in range(0, len(heights), per_row)]
        width = per_row * NODE_W + (per_row - 1) * COLUMN_GAP
        height = sum(max(c) for c in chunks) + WRAP_GAP * (len(chunks) - 1)
        # the scale the drawing fits a canvas of that shape at: the larger, the more readable
        scale = min(CANVAS_ASPECT / width, 1 / height)
        if -scale < best:
            best, best_rows = -scale, rows
    return best_rows


def _feeders_centre(links: list, node: str, centre: dict[str, float]) -> float:
    ys = [centre[lk.src.node] for lk in links if lk.dst.node == node and lk.src.node in centre]
    return sum(ys) / len(ys) if ys else float("inf")


def positions(graph: Graph) -> dict[str, tuple[float, float]]:
    """Where each node is drawn: where the user put it, else where the auto-layout puts it."""
    auto = auto_layout(graph)
    return {n.id: tuple(graph.layout.get(n.id, auto[n.id])) for n in graph.nodes}  # type: ignore[misc]


def _overlaps(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


def free_spot(graph: Graph, kind: str) -> tuple[float, float]:
    """The auto-layout place of a new node, moved down until it covers no placed node."""
    x, y = auto_layout(graph)[kind]
    placed = [(px, py, NODE_W, node_height(k)) for k, (px, py) in graph.layout.items() if k != kind and graph.has(k)]
    h = node_height(kind)
    while any(_overlaps((x, y, NODE_W, h), r) for r in placed):
        y += ROW_H
    return x, y


def subtitle(graph: Graph, node_id: str) -> str:
    """What the stage is set to, in a few words (the canvas, the stage list and screen readers say it)."""
    node = graph.node(node_id)
    if node is None:
        return ""
    if node_id == "rollout":
        n = node.params.get("n")
        return f"n = {n} per prompt" if n is not None else "n = 1 per prompt (default)"
    if node_id == "advantage":
        est = graph.estimator
        kind = "reads values" if est == "gae" else "group of n" if is_group_estimator(est) else "no critic"
        return f"{est} ({kind})" if est in ESTIMATOR_NOTES else f"{est} (not a verl 0.9.1 estimator)"
    if node_id == "reward":
        variant = node.variant or "rule"
        fn = node.params.get("function_path")
        what = REWARD_TITLES.get(variant, variant)
        if variant == "rule":
            return f"{what}: {_tail(fn)}" if fn else "built-in rule scorer"
        model = node.params.get("model_path")
        return f"{what}: {_tail(model)}" if model else f"{what}: no model set"
    return _FIXED.get(node_id, "")


_FIXED = {
    "data": "prompts from data.train_files",
    "ref": "frozen copy of the initial actor",
    "critic_values": "value model",
    "kl_reward": "penalty in the reward",
    "kl_loss": "penalty in the actor loss",
    "actor_update": "policy gradient step",
    "critic_update": "value regression step",
}


def _tail(path: str) -> str:
    tail = path.rstrip("/").rsplit("/", 1)[-1]
    return tail if len(tail) <= 24 else "…" + tail[-23:]


# -- link routes ------------------------------------------------------------------------------------------------
LINK_MARGIN = 12.0  # clearance between a link and a stage it passes
LANE = 5.0  # spacing of links that share a gap


def _port_at(pos: dict[str, tuple[float, float]], ref) -> tuple[float, float]:
    dx, dy = port_offset(ref.node, ref.port)
    x, y = pos[ref.node]
    return x + dx, y + dy


def _free_y(target: float, blocked: list[tuple[float, float]]) -> float:
    """The y nearest ``target`` outside every blocked interval."""
    candidates = [target] + [edge for lo, hi in blocked for edge in (lo, hi)]
    free = [y for y in candidates if not any(lo < y < hi for lo, hi in blocked)]
    return min(free, key=lambda y: (abs(y - target), y))


def _route(graph: Graph, link, pos: dict[str, tuple[float, float]]) -> list[tuple[float, float]]:
    (sx, sy), (ex, ey) = _port_at(pos, link.src), _port_at(pos, link.dst)
    if ex <= sx:
        bottom = pos[link.src.node][1] + node_height(link.src.node)
        if pos[link.dst.node][1] >= bottom:  # into a later row: right, down the gap, left under the row, down in
            return _wrapped(graph, (sx, sy), (ex, ey), bottom, pos[link.dst.node][1], pos)
        return [(sx, sy), (ex, ey)]  # drawn backwards by the user: no channel to look for
    boxes = sorted(
        (pos[n.id][0], pos[n.id][0] + NODE_W, pos[n.id][1] - LINK_MARGIN, pos[n.id][1] + node_height(n.id) + LINK_MARGIN)
        for n in graph.nodes
        if n.id not in (link.src.node, link.dst.node) and pos[n.id][0] < ex and pos[n.id][0] + NODE_W > sx
    )
    clusters: list[list[tuple[float, float, float, float]]] = []
    for box in boxes:  # stages whose x ranges overlap form one column to cross
        if clusters and box[0] < max(b[1] for b in clusters[-1]):
            clusters[-1].append(box)
        else:
            clusters.append([box])
    points = [(sx, sy)]
    for cluster in clusters:
        x0, x1 = min(b[0] for b in cluster), max(b[1] for b in cluster)
        t = ((x0 + x1) / 2 - sx) / (ex - sx)
        y = _free_y(sy + t * (ey - sy), [(b[2], b[3]) for b in cluster])
        points += [(x0, y), (x1, y)]
    return points + [(ex, ey)]


def _wrapped(graph: Graph, start: tuple[float, float], end: tuple[float, float], src_bottom: float, dst_top: float,
             pos: dict[str, tuple[float, float]]) -> list[tuple[float, float]]:
    """An orthogonal route (six points, every segment straight) for a link that runs on to a later row."""
    (sx, sy), (ex, ey) = start, end
    out_x, in_x = sx + COLUMN_GAP / 2, ex - COLUMN_GAP / 2
    spans = [(pos[n.id][1], pos[n.id][1] + node_height(n.id)) for n in graph.nodes
             if pos[n.id][0] < out_x and pos[n.id][0] + NODE_W > in_x]
    bands, lo = [], src_bottom  # the free bands between the two stages; the widest is the gap between the rows
    for top, bottom in sorted(spans):
        if top > lo and lo < dst_top:
            bands.append((lo, min(top, dst_top)))
        lo = max(lo, bottom)
    if lo < dst_top:
        bands.append((lo, dst_top))
    gap = max(bands, key=lambda b: (b[1] - b[0], b[0]), default=(src_bottom, dst_top))
    y = (gap[0] + gap[1]) / 2
    return [(sx, sy), (out_x, sy), (out_x, y), (in_x, y), (in_x, ey), (ex, ey)]


def is_wrapped(points: list[tuple[float, float]]) -> bool:
    """Whether a route is one of :func:`_wrapped`'s (drawn with straight segments and rounded corners)."""
    return len(points) == 6 and points[1][0] == points[2][0] and points[3][0] == points[4][0]


def routes(graph: Graph, pos: dict[str, tuple[float, float]] | None = None) -> dict:
    """Link → the points its curve passes: through the gaps of the columns it crosses, never under a stage;
    links sharing a gap run side by side."""
    pos = pos or positions(graph)
    out = {lk: _route(graph, lk, pos) for lk in graph.links if lk.src.node in pos and lk.dst.node in pos}
    wrapped = [lk for lk, pts in out.items() if is_wrapped(pts)]
    for k, lk in enumerate(wrapped):  # each its own lane in the gap between the rows, and its own way down
        shift = (k - (len(wrapped) - 1) / 2) * LANE
        (sx, sy), (ox, _), (_, y), (ix, _), (_, ey), end = out[lk]
        out[lk] = [(sx, sy), (ox + shift, sy), (ox + shift, y + shift), (ix + shift, y + shift), (ix + shift, ey), end]
    lanes: dict[tuple[float, float], list] = {}
    for lk, pts in out.items():
        if lk in wrapped:
            continue
        for i in range(1, len(pts) - 1, 2):
            lanes.setdefault((round(pts[i][0]), round(pts[i][1])), []).append((lk, i))
    for members in lanes.values():
        for k, (lk, i) in enumerate(members):
            shift = (k - (len(members) - 1) / 2) * LANE
            pts = out[lk]
            pts[i] = (pts[i][0], pts[i][1] + shift)
            pts[i + 1] = (pts[i + 1][0], pts[i + 1][1] + shift)
    return out
