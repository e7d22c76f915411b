"""``--gpus`` specs: ``8``, ``8xH100-80GB``, ``2x8xH100-80GB`` (nodes x GPUs per node x model)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_SPEC = re.compile(r"^\s*(?:(\d+)\s*[x×*]\s*)?(\d+)\s*(?:[x×*]\s*(\S.*?))?\s*$")

# The largest cluster the wizard plans: far past any verl run reported, small enough that building its placement
# and memory table stays interactive. Also the bound every reader of GPU counts checks before building anything.
MAX_GPUS = 16_384
MAX_GPUS_PER_NODE = 64


@dataclass(frozen=True)
class GpuSpec:
    nodes: int
    gpus_per_node: int
    model: str | None = None
    cpus: float | None = None  # logical CPUs of a live Ray cluster, when known

    @property
    def total(self) -> int:
        return self.nodes * self.gpus_per_node

    def __str__(self) -> str:
        text = f"{self.gpus_per_node}x{self.model}" if self.model else f"{self.gpus_per_node}"
        return f"{self.nodes}x{text}" if self.nodes != 1 else text


def parse_gpu_spec(text: str) -> GpuSpec:
    """Parse a GPU spec; ValueError with a one-line reason otherwise."""
    m = _SPEC.match(text or "")
    if not m:
        raise ValueError(f"cannot read GPU spec {text!r}: use N, NxMODEL or NODESxNxMODEL, e.g. 2x8xH100-80GB")
    nodes, per_node, model = int(m.group(1) or 1), int(m.group(2)), m.group(3)
    if model is None and m.group(1) and per_node >= 100:  # "8x4090": 8 RTX 4090s, not 4090 GPUs per node
        nodes, per_node, model = 1, nodes, m.group(2)
    check_gpu_counts(nodes, per_node, f"GPU spec {text!r}")
    return GpuSpec(nodes=nodes, gpus_per_node=per_node, model=model)


def check_gpu_counts(nodes: int, per_node: int, what: str) -> None:
    """ValueError (one line) unless ``nodes`` x ``per_node`` is a cluster the wizard can plan."""
    if nodes < 1 or per_node < 1:
        raise ValueError(f"{what} needs at least 1 node and 1 GPU")
    if per_node > MAX_GPUS_PER_NODE:
        raise ValueError(f"{what} has {per_node} GPUs per node; no machine has more than {MAX_GPUS_PER_NODE}")
    if nodes * per_node > MAX_GPUS:
        raise ValueError(f"{what} asks for {nodes * per_node:,} GPUs; the wizard plans up to {MAX_GPUS:,}")
