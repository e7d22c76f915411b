"""``--gpus`` specs: ``8``, ``8xH100-80GB``, ``2x8xH100-80GB`` (nodes x GPUs per node x model)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_SPEC = re.compile(r"^\s*(?:(\d+)\s*[x×]\s*)?(\d+)\s*(?:[x×]\s*([A-Za-z][\w.\-]*))?\s*$")


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
    nodes = int(m.group(1) or 1)
    per_node = int(m.group(2))
    if nodes < 1 or per_node < 1:
        raise ValueError(f"GPU spec {text!r} needs at least 1 node and 1 GPU")
    if nodes * per_node > 100_000:
        raise ValueError(f"GPU spec {text!r} asks for {nodes * per_node} GPUs; that is not a cluster verl can plan")
    return GpuSpec(nodes=nodes, gpus_per_node=per_node, model=m.group(3))
