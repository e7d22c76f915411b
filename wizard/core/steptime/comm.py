"""FSDP's collectives in a step over several GPUs, from the links between them: formulas, not measured (every run
the step time is calibrated on used one GPU, where FSDP sends nothing).

What FSDP moves per GPU, verl 0.9.1's engine as torch runs it (ring collectives: each GPU sends and receives
(N - 1) / N of the tensor, N the shard count):
- each micro-batch's forward all-gathers the bf16 params (2 bytes a param); an update's backward gathers them again
  (``reshard_after_forward``, verl's default, freed them after the forward); with ``reshard_after_forward=false`` a
  pass gathers them once and keeps them;
- each micro-batch's backward reduce-scatters the gradients in the reduce dtype (fp32 by verl's default mixed
  precision); ``use_no_sync_for_gradient_accumulation`` does it once per mini-batch.

FSDP prefetches the next layer's gather and reduces the last layer's gradients while it computes, so a phase takes
about the longer of its compute and its collectives: only what the collectives take beyond the compute is added.
The link's rate: NVLink at the catalogue's rate per link and direction (25 GB/s for NVLink 2-4, 50 for NVLink 5) times
``nvidia-smi topo -m``'s NV# (or the catalogue's link count), else PCIe at the measured host-link rate; between nodes an assumed 25 GB/s per GPU (a 200 Gb/s network
per GPU; the cluster does not say); a ring goes at its slowest link, at ``RING_EFFICIENCY`` of it. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from wizard.core.hardware.cluster import Cluster, LinkKind

NVLINK_GBS = 25.0  # one NVLink (NVLink 2-4: 50 GB/s both directions), one direction
NETWORK_GBS = 25.0  # between nodes, per GPU, assumed (a 200 Gb/s NIC per GPU)
RING_EFFICIENCY = 0.8  # NCCL's ring bus bandwidth / the link's (nccl-tests on 8 x H100 SXM: ~360 of 450 GB/s)
ALLREDUCE_LATENCY_S = 10e-6  # one small all-reduce inside a decode step (vLLM's custom all-reduce), assumed


@dataclass(frozen=True)
class Link:
    gbs: float  # achieved GB/s per GPU and direction for a ring over the shards
    how: str


def ring_link(cluster: Cluster | None, shards: int, host_link_gbs: float) -> Link | None:
    """The rate a ring of ``shards`` GPUs (the first node's with GPUs, in index order, then node by node) gets: its
    slowest hop between neighbours, as NCCL's ring goes; None for one shard or no cluster."""
    node = _first_node(cluster) if shards >= 2 else None
    if node is None:
        return None
    per_node = max(1, node.gpu_count or len(node.gpus))
    used = sorted(g.index for g in node.gpus)[:min(shards, per_node)]
    per_link = {g.index: g.nvlink_gbs_per_link or NVLINK_GBS for g in node.gpus}
    links = {(x.a, x.b): x for x in node.links}
    rates, kinds = [], set()
    for a, b in zip(used, used[1:] + used[:1]) if len(used) > 1 else ():
        link = links.get((min(a, b), max(a, b)))
        if link is not None and link.kind is LinkKind.NV and link.nvlinks:
            rates.append(link.nvlinks * per_link[a])
            kinds.add(f"NVLink x{link.nvlinks}")
        else:
            rates.append(host_link_gbs)
            kinds.add("PCIe")
    if not rates:  # GPUs the cluster could not describe
        rates, kinds = [host_link_gbs], {"PCIe (assumed: the links are unknown)"}
    gbs, how = min(rates), " and ".join(sorted(kinds))
    if shards > per_node:
        net, said = network_rate(cluster)
        gbs, how = min(gbs, net), f"{how} within a node, {net:g} GB/s per GPU between nodes ({said})"
    return Link(gbs * RING_EFFICIENCY, how)


def network_rate(cluster: Cluster | None) -> tuple[float, str]:
    """GB/s per GPU between nodes: the slowest a cluster spec states (network_gbps), else the assumed rate."""
    stated = [n.network_gbs for n in (cluster.nodes if cluster else []) if n.network_gbs and (n.gpu_count or n.gpus)]
    return (min(stated), "the cluster spec's") if stated else (NETWORK_GBS, "assumed; a cluster spec's network_gbps "
                                                                            "states it")


def _first_node(cluster: Cluster | None):
    """The first alive node with GPUs (the one the rings are timed on), or None."""
    return next((n for n in cluster.nodes if n.alive and (n.gpu_count or n.gpus)), None) if cluster else None


def node_gpus(cluster: Cluster | None) -> int:
    """GPUs per node (the first alive node's with GPUs); 0 where the cluster does not say."""
    node = _first_node(cluster)
    return (node.gpu_count or len(node.gpus)) if node is not None else 0


def network_link(cluster: Cluster | None = None) -> Link:
    """Between nodes: the rate per GPU (stated or assumed), at the ring's efficiency."""
    net, said = network_rate(cluster)
    return Link(net * RING_EFFICIENCY, f"{net:g} GB/s per GPU between nodes ({said})")


def ring_bytes(tensor_bytes: float, shards: int) -> float:
    """What one GPU sends (and receives) in a ring all-gather or reduce-scatter of a tensor of ``tensor_bytes``."""
    return tensor_bytes * (shards - 1) / shards if shards > 1 else 0.0


def allreduce_bytes(tensor_bytes: float, ranks: int) -> float:
    """What one GPU sends in a ring all-reduce: a reduce-scatter and an all-gather, 2 (R - 1) / R of the tensor."""
    return 2 * tensor_bytes * (ranks - 1) / ranks if ranks > 1 else 0.0


def forward_bytes(params: int, shards: int, micro_batches: int, keeps_gathered: bool) -> float:
    """A forward-only pass: the bf16 params gathered per micro-batch (once, when the pass keeps them gathered)."""
    return ring_bytes(2 * params, shards) * (1 if keeps_gathered else micro_batches)


def update_bytes(params: int, trainable: int, shards: int, micro_batches: int, steps: int, keeps_gathered: bool,
                 reduce_bytes: int, syncs_per_step: int, gather_once: bool = False) -> float:
    """An update: per micro-batch the forward's gather and the backward's (none when the forward kept them), and the
    gradients' reduce-scatter ``syncs_per_step`` times per optimizer step (1 with no_sync, else every micro-batch).
    ``gather_once``: FSDP1's SHARD_GRAD_OP under no_sync frees nothing in the backward (torch _runtime_utils.py
    ``_should_free_in_backward``), so a step gathers its params once."""
    gathers = ring_bytes(2 * params, shards) * (1 if gather_once else micro_batches * (1 if keeps_gathered else 2))
    reduces = ring_bytes(reduce_bytes * trainable, shards) * syncs_per_step
    return steps * (gathers + reduces)


def tp_decode_seconds(layers: int, sequences: int, hidden: int, tp: int, link: Link | None) -> float:
    """What the rollout's tensor parallelism adds to one decode step: two all-reduces per layer (after attention and
    after the MLP) of the step's bf16 activations (sequences x hidden), each a latency plus 2 (TP - 1) / TP of it
    over the link."""
    if tp < 2 or link is None:
        return 0.0
    size = 2 * sequences * hidden
    return 2 * layers * (ALLREDUCE_LATENCY_S + 2 * (tp - 1) / tp * size / (link.gbs * 1e9))
