"""Edits of a dataflow graph: each returns a new graph, or raises DataflowError with the reason.

The GUI's commands call these; the rules of what may be linked are :func:`can_connect`'s.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from wizard.core.dataflow.graph import (
    GROUP_N,
    KINDS,
    DataflowError,
    Graph,
    Link,
    Node,
    REWARD_VARIANTS,
    PortRef,
    can_connect,
    canonical_links,
    is_group_estimator,
    sorted_links,
    sorted_nodes,
    uses_values,
)
from wizard.core.dataflow.layout import free_spot, positions as drawn


def connect(graph: Graph, src: PortRef, dst: PortRef) -> Graph:
    ok, reason = can_connect(graph, src, dst)
    if not ok:
        raise DataflowError(reason)
    kept = [lk for lk in graph.links if lk.dst != dst]
    return replace(graph, links=sorted_links([*kept, Link(src, dst)]))


def disconnect(graph: Graph, link: Link) -> Graph:
    if link not in graph.links:
        raise DataflowError(f"there is no link {link}")
    return replace(graph, links=sorted_links(lk for lk in graph.links if lk != link))


def _wire(graph: Graph, node_id: str) -> Graph:
    """Add the canonical links that touch ``node_id``; they replace what fed the same inputs."""
    new = [lk for lk in canonical_links(graph) if node_id in (lk.src.node, lk.dst.node)]
    # Inserting a stage between two others (KL in reward between Reward and Advantage) takes over the input.
    taken = {lk.dst for lk in new}
    kept = [lk for lk in graph.links if lk.dst not in taken]
    return replace(graph, links=sorted_links([*kept, *new]))


def add_node(graph: Graph, kind: str, wire: bool = True) -> Graph:
    """Add an optional stage; ``wire`` links it where verl's step reads and writes it."""
    spec = KINDS.get(kind)
    if spec is None:
        raise DataflowError(f"unknown stage {kind!r}; stages: {', '.join(KINDS)}")
    if graph.has(kind):
        raise DataflowError(f"the step already has {spec.title}; verl runs each stage once")
    if not spec.optional:
        raise DataflowError(f"{spec.title} always runs in verl and cannot be added twice")
    grown = replace(graph, nodes=sorted_nodes([*graph.nodes, Node(kind)]))
    if graph.layout:
        grown = replace(grown, layout={**graph.layout, kind: free_spot(grown, kind)})
    return _wire(grown, kind) if wire else grown


def remove_node(graph: Graph, node_id: str) -> Graph:
    node = graph.node(node_id)
    if node is None:
        raise DataflowError(f"there is no stage {node_id!r} in this graph")
    if not node.spec.optional:
        raise DataflowError(f"{node.title} always runs in verl; it cannot be removed")
    orphaned = {lk.dst for lk in graph.links if lk.src.node == node_id}
    shrunk = Graph(
        nodes=tuple(n for n in graph.nodes if n.id != node_id),
        links=tuple(lk for lk in graph.links if node_id not in (lk.src.node, lk.dst.node)),
        layout={k: v for k, v in graph.layout.items() if k != node_id},
    )
    # What the stage sat between joins up again (Reward feeds Advantage once KL in reward is gone).
    healed = [lk for lk in canonical_links(shrunk) if lk.dst in orphaned]
    return replace(shrunk, links=sorted_links([*shrunk.links, *healed]))


def set_estimator(graph: Graph, estimator: str) -> Graph:
    """Change the estimator: drop the values link it does not read, draw the one gae needs, and raise
    rollout.n to a group when a group estimator meets n < 2 (it would compare a response with itself)."""
    node = graph.node("advantage")
    if node is None:
        raise DataflowError("this graph has no Advantage stage")
    out = _replace_node(graph, replace(node, variant=estimator))
    values = PortRef("advantage", "values")
    if not uses_values(estimator):
        out = replace(out, links=tuple(lk for lk in out.links if lk.dst != values))
    elif out.feeding(values) is None and out.has("critic_values"):
        out = replace(out, links=sorted_links([*out.links, Link(PortRef("critic_values", "values"), values)]))
    rollout = out.node("rollout")
    if is_group_estimator(estimator) and rollout is not None and (rollout.params.get("n") or 1) < 2:
        out = set_param(out, "rollout", "n", GROUP_N)
    return out


def set_reward(graph: Graph, variant: str) -> Graph:
    if variant not in REWARD_VARIANTS:
        raise DataflowError(f"reward is one of {', '.join(REWARD_VARIANTS)}, not {variant!r}")
    node = graph.node("reward")
    if node is None:
        raise DataflowError("this graph has no Reward stage")
    return _replace_node(graph, replace(node, variant=variant))


def set_param(graph: Graph, node_id: str, name: str, value: Any) -> Graph:
    node = graph.node(node_id)
    if node is None:
        raise DataflowError(f"there is no stage {node_id!r} in this graph")
    params = {k: v for k, v in node.params.items() if k != name}
    if value is not None and value != "":
        params[name] = value
    return _replace_node(graph, replace(node, params=params))


def _replace_node(graph: Graph, node: Node) -> Graph:
    return replace(graph, nodes=tuple(node if n.id == node.id else n for n in graph.nodes))


def move(graph: Graph, positions: dict[str, tuple[float, float]]) -> Graph:
    """Place nodes; the first move pins every node where it is drawn, so later additions do not reshuffle.

    Nodes put back where they are drawn (a drag that ends where it began) are no edit: the same graph comes back."""
    base = dict(graph.layout) if graph.layout else drawn(graph)
    asked = {k: (float(x), float(y)) for k, (x, y) in positions.items() if graph.has(k)}
    if all(base.get(k) == xy for k, xy in asked.items()):
        return graph
    return replace(graph, layout={**base, **asked})


def clear_layout(graph: Graph) -> Graph:
    return replace(graph, layout={})
