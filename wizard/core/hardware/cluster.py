"""The hardware a plan runs on: a ``Cluster`` of nodes, GPUs and the links between GPUs.

Every discovery source (NVML, ``nvidia-smi -q -x``, a live Ray cluster, a cluster spec file,
the GPU catalogue) produces this one shape, so the rules, the placement board and ``detect``
never care where the facts came from. What a source could not tell stays ``None``: an unknown
is not a zero.
"""

from __future__ import annotations

import re

from enum import Enum

from pydantic import BaseModel, ConfigDict, Field

from wizard.core.hardware.gpus import MAX_GPUS, GpuSpec, check_gpu_counts

SCHEMA_VERSION = 1
GIB = 1024**3
MIB = 1024**2


class _Model(BaseModel):
    model_config = ConfigDict(validate_assignment=True, extra="forbid")


class LinkKind(str, Enum):
    """How two GPUs reach each other, best first, named as ``nvidia-smi topo -m`` names them."""

    NV = "NV"  # a bonded set of NVLinks (shown NV#, # = link count)
    PIX = "PIX"  # at most one PCIe bridge
    PXB = "PXB"  # several PCIe bridges, no host bridge
    PHB = "PHB"  # through a PCIe host bridge (the CPU)
    NODE = "NODE"  # between host bridges of one NUMA node
    SYS = "SYS"  # across the SMP interconnect between NUMA nodes (QPI/UPI)


LINK_RANK = {k: i for i, k in enumerate(LinkKind)}


class P2P(str, Enum):
    """NVML's peer-to-peer answer, reduced to what a user acts on."""

    OK = "ok"
    NOT_SUPPORTED = "not_supported"  # topology, chipset or driver refuses
    DISABLED = "disabled"  # supported but switched off (e.g. by the hypervisor)
    UNKNOWN = "unknown"


class GpuLink(_Model):
    """The connection between GPU ``a`` and GPU ``b`` (indices within one node, a < b)."""

    a: int
    b: int
    kind: LinkKind
    nvlinks: int = 0  # NVLinks bonded between the two (kind NV)
    p2p_read: P2P = P2P.UNKNOWN
    p2p_write: P2P = P2P.UNKNOWN

    @property
    def label(self) -> str:
        """The matrix cell ``nvidia-smi topo -m`` would print: NV18, PIX, SYS..."""
        if self.kind is LinkKind.NV:
            return f"NV{self.nvlinks}" if self.nvlinks else "NV"
        return self.kind.value


class GpuProcess(_Model):
    pid: int
    used_memory_bytes: int | None = None


class GPU(_Model):
    """One GPU as the process that will use it sees it.

    ``index`` is the CUDA index inside the process (after ``CUDA_VISIBLE_DEVICES``);
    ``physical_index`` is NVML's index on the machine.
    """

    index: int
    physical_index: int | None = None
    name: str
    uuid: str | None = None
    pci_bus_id: str | None = None
    memory_total_bytes: int | None = None
    memory_free_bytes: int | None = None
    compute_capability: tuple[int, int] | None = None
    mig_enabled: bool | None = None
    numa_node: int | None = None
    cpu_affinity: str | None = None  # a CPU list as Linux writes it: "0-15,32-47"
    processes: list[GpuProcess] | None = None
    catalogue_id: str | None = None  # the GPU catalogue entry this GPU matched, e.g. "H200-141GB"
    # from that catalogue entry: the step-time prediction's scale (dense BF16 tensor TFLOP/s; GB/s)
    bf16_tflops: float | None = None
    memory_bandwidth_gbs: float | None = None
    nvlink_gbs_per_link: float | None = None  # one NVLink, one direction (NVLink 2-4: 25 GB/s, NVLink 5: 50)

    @property
    def memory_total_gib(self) -> float | None:
        return None if self.memory_total_bytes is None else self.memory_total_bytes / GIB


class ClusterNode(_Model):
    """One machine. ``gpu_count`` is what the source declares; ``gpus`` the ones it could describe.

    A Ray node declares ``GPU: 8`` without telling which GPUs; a spec file describes GPUs it has
    never seen from the catalogue; NVML describes every GPU.
    """

    name: str
    address: str | None = None
    alive: bool = True
    gpu_count: int = 0
    cpus: float | None = None
    memory_bytes: int | None = None
    network_gbs: float | None = None  # GB/s per GPU to other nodes, where a cluster spec states it
    gpus: list[GPU] = Field(default_factory=list)
    links: list[GpuLink] = Field(default_factory=list)
    interconnect: str | None = None  # for spec files: "nvlink" or "pcie" when no link matrix is known

    def link(self, a: int, b: int) -> GpuLink | None:
        lo, hi = min(a, b), max(a, b)
        return next((x for x in self.links if x.a == lo and x.b == hi), None)

    def nvlink_islands(self) -> list[list[int]]:
        """Groups of GPU indices joined by NVLink (singletons for GPUs with none): where TP groups belong."""
        parent = {g.index: g.index for g in self.gpus}

        def root(i: int) -> int:
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i

        for link in self.links:
            if link.kind is LinkKind.NV and link.a in parent and link.b in parent:
                parent[root(link.a)] = root(link.b)
        groups: dict[int, list[int]] = {}
        for i in sorted(parent):
            groups.setdefault(root(i), []).append(i)
        return sorted(groups.values())


SOURCES = ("nvml", "nvidia-smi", "ray", "spec", "catalogue", "none")  # where a Cluster's facts came from


class Cluster(_Model):
    """Nodes × GPUs plus where the facts came from and what the user should know about them.

    ``notes`` are plain explanations ("no NVIDIA driver on this machine"), not problems; problems
    are findings, made by the module that discovered them.
    """

    schema_version: int = SCHEMA_VERSION
    source: str  # one of SOURCES
    nodes: list[ClusterNode] = Field(default_factory=list)
    driver_version: str | None = None
    cuda_driver_version: str | None = None  # the newest CUDA the driver runs, "13.0"
    ray_version: str | None = None
    visible_devices: str | None = None  # CUDA_VISIBLE_DEVICES as applied, None when unset
    notes: list[str] = Field(default_factory=list)

    @property
    def gpu_total(self) -> int:
        return sum(n.gpu_count for n in self.nodes if n.alive)

    def to_gpu_spec(self) -> GpuSpec | None:
        """The ``--gpus`` view the rules use: uniform nodes only (verl's ``n_gpus_per_node`` × ``nnodes``).

        Mixed nodes give the smallest per-node count, since verl places the same number on each node.
        """
        alive = [n for n in self.nodes if n.alive and n.gpu_count > 0]
        if not alive:
            return None
        per_node = min(n.gpu_count for n in alive)
        models = {g.catalogue_id or g.name for n in alive for g in n.gpus}
        model = models.pop() if len(models) == 1 else None
        return GpuSpec(nodes=len(alive), gpus_per_node=per_node, model=model)


def cuda_version_text(value: int | None) -> str | None:
    """NVML/CUDA encode versions as 1000*major + 10*minor: 13000 -> "13.0", 12080 -> "12.8"."""
    if not isinstance(value, int) or value <= 0:
        return None
    return f"{value // 1000}.{(value % 1000) // 10}"


def cpu_list_text(cpus: list[int]) -> str:
    """[0,1,2,3,8,9] -> "0-3,8-9", the way Linux and ``nvidia-smi topo -m`` print CPU affinity."""
    out: list[str] = []
    cpus = sorted(set(cpus))
    i = 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(out)


# --------------------------------------------------------------------------------------------
# The GPU catalogue: facts about GPU models, for planning without the hardware.


class GpuModel(_Model):
    """One catalogue entry. ``memory_gb`` is the datasheet figure; ``nvml_memory_mib`` what NVML
    reports for it where a capture recorded it (a little less is usable than the datasheet says)."""

    id: str  # what users type: H100-80GB
    name: str
    nvml_names: list[str] = Field(default_factory=list)
    kind: str  # datacenter | workstation | consumer
    memory_gb: float
    nvml_memory_mib: int | None = None
    memory_bandwidth_gbs: float
    bf16_tflops: float | None = None  # dense BF16 tensor-core TFLOP/s (no sparsity); None: no BF16 tensor cores
    nvlink_gbs: float | None = None  # total NVLink bandwidth per GPU, both directions; None: no NVLink
    nvlinks: int | None = None  # NVLinks per GPU
    bf16: bool
    fp8: bool
    compute_capability: tuple[int, int]
    source: str
    date: str

    @property
    def memory_bytes(self) -> int:
        return self.nvml_memory_mib * MIB if self.nvml_memory_mib else int(self.memory_gb * GIB)

    @property
    def nvlink_gbs_per_link(self) -> float | None:
        """One NVLink's rate in one direction: the total over both directions and all links, shared out."""
        return self.nvlink_gbs / 2 / self.nvlinks if self.nvlink_gbs and self.nvlinks else None


class GpuCatalogue(_Model):
    version: int = 1
    gpus: list[GpuModel]

    def find(self, name: str) -> GpuModel | None:
        """The entry a name means, however it is written: a catalogue id (``H100-80GB``), an NVML name
        (``NVIDIA H100 80GB HBM3``), any case, with or without spaces, dashes, ``NVIDIA`` or ``RTX``
        (``h100 80gb``, ``RTX4090-24GB``, ``RTXA6000-48GB``), or the model alone when only one entry has it
        (``4090``, ``A6000``, ``H200``). None when unknown or ambiguous (``A100``: 40 or 80 GB)."""
        matches = self.matches(name)
        return matches[0] if len(matches) == 1 else None

    def resolve(self, name: str, where: str = "GPU model") -> GpuModel:
        """The entry ``name`` means, or ClusterSpecError (one line) with the ids it may have meant."""
        entry = self.find(name)
        if entry is None and re.match(r"(amd|instinct|mi\d|radeon|intel|gaudi|hl-?\d|ascend|\d{3}[a-z]?$|tpu)",
                                      _squash(name)):
            raise ClusterSpecError(f"{where}: {name!r} is not an NVIDIA GPU; the wizard's memory and step-time models "
                                   "know NVIDIA GPUs only (`verl-wizard detect --catalogue` lists them)")
        if entry is None:
            hint = self.suggest(name)
            hint_text = f"; did you mean {', '.join(hint)}?" if hint else "; `verl-wizard detect --catalogue` lists them"
            raise ClusterSpecError(f"{where}: unknown GPU model {name!r}{hint_text}")
        return entry

    def matches(self, name: str) -> list[GpuModel]:
        key = _squash(name)
        if not key:
            return []
        exact = [e for e in self.gpus if key in _full_names(e)]
        return exact or [e for e in self.gpus if key in _base_names(e)]

    def suggest(self, name: str) -> list[str]:
        """Ids to offer for a name ``find`` does not take: the entries it is ambiguous between, or the closest."""
        import difflib

        several = self.matches(name)
        if several:
            return [e.id for e in several]
        by_key = {k: e.id for e in self.gpus for k in (_full_names(e) | _base_names(e))}
        close = difflib.get_close_matches(_squash(name), list(by_key), n=6, cutoff=0.6)
        return list(dict.fromkeys(by_key[k] for k in close))[:3]


def _squash(text: str) -> str:
    """Lower case, no separators: ``RTX-A6000 48GB`` and ``rtx_a6000-48gb`` read the same."""
    return re.sub(r"[\s_\-]+", "", text).casefold()


def _bare(key: str) -> str:
    for prefix in ("nvidia", "geforce", "rtx"):
        key = key.removeprefix(prefix)
    return key


def _full_names(entry: GpuModel) -> set[str]:
    keys = {_squash(entry.id)} | {_squash(n) for n in entry.nvml_names}
    return keys | {_bare(k) for k in keys}


def _base_names(entry: GpuModel) -> set[str]:
    base = _squash(entry.id.rsplit("-", 1)[0])  # the id without its memory: H100-80GB -> h100
    return {base, _bare(base)}



# --------------------------------------------------------------------------------------------
# Cluster spec files: a cluster the user describes because it is not in front of them.
#
#   nodes:                       # one entry per kind of node
#     - count: 4                 # nodes of this kind (default 1)
#       gpus: 8                  # GPUs per node
#       gpu: H100-80GB           # a catalogue id or an NVML name
#       interconnect: nvlink     # nvlink | pcie (default: nvlink when the GPU model has it)
#       cpus: 128                # optional
#       memory_gib: 2048         # optional: host RAM a node (bounds CPU offload)
#       network_gbps: 400        # optional: the network between nodes, Gb/s per GPU (default: 200 assumed)
#       name: trainer            # optional node-name prefix
#
# or, as a short form, ``cluster: 4x8xH100-80GB nvlink`` (or that text alone: "4 nodes x 8 H100-80GB NVLink").


class ClusterSpecError(ValueError):
    """A cluster spec the wizard cannot read; the message is one line naming the field."""


class NodeGroupSpec(_Model):
    count: int = Field(default=1, ge=1, le=100_000)
    gpus: int = Field(ge=0, le=1024)
    gpu: str | None = None
    interconnect: str | None = Field(default=None, pattern="^(nvlink|pcie)$")
    cpus: float | None = Field(default=None, gt=0)
    memory_gib: float | None = Field(default=None, gt=0, le=1 << 20, strict=True)  # host RAM a node: bounds CPU offload
    network_gbps: float | None = Field(default=None, gt=0, le=100_000)  # between nodes, Gb/s per GPU (NIC per GPU)
    name: str | None = None


class ClusterSpec(_Model):
    version: int = 1
    name: str | None = None
    nodes: list[NodeGroupSpec] = Field(min_length=1)


_SHORT = r"^\s*(?:(\d+)\s*(?:nodes?)?\s*[x×*]\s*)?(\d+)\s*(?:gpus?)?\s*(?:[x×*]\s*)?([A-Za-z][\w.\-]*)?\s*(nvlink|pcie)?\s*$"


def parse_cluster_spec(doc: object, catalogue: GpuCatalogue) -> Cluster:
    """Turn a loaded spec (a mapping, or the short-form text) into a Cluster; ClusterSpecError otherwise."""
    import re

    from pydantic import ValidationError

    if doc is None:
        raise ClusterSpecError("the cluster spec is empty: write 'nodes:' entries, or 'cluster: 4x8xH100-80GB nvlink'")
    if isinstance(doc, dict) and set(doc) == {"cluster"} and isinstance(doc["cluster"], str):
        doc = doc["cluster"]
    if isinstance(doc, str):
        m = re.match(_SHORT, doc, flags=re.IGNORECASE)
        if not m:
            raise ClusterSpecError(
                f"cannot read cluster {doc.strip()!r}: write NODESxGPUSxMODEL [nvlink|pcie], e.g. 4x8xH100-80GB nvlink"
            )
        doc = {"nodes": [{"count": int(m.group(1) or 1), "gpus": int(m.group(2)), "gpu": m.group(3),
                          "interconnect": (m.group(4) or "").lower() or None}]}
    if not isinstance(doc, dict):
        raise ClusterSpecError(f"a cluster spec is a mapping with 'nodes:' (or 'cluster: 4x8xH100-80GB'), got {type(doc).__name__}")
    try:
        spec = ClusterSpec.model_validate(doc)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"]).lstrip(".") or "spec"
        if err["type"] == "extra_forbidden":
            model = NodeGroupSpec if "nodes" in err["loc"] else ClusterSpec
            raise ClusterSpecError(f"{where}: unknown key (known: {', '.join(model.model_fields)})") from None
        got = "" if err["type"] == "missing" else f", got {err.get('input')!r}"
        raise ClusterSpecError(f"{where}: {err['msg']}{got}") from None
    return _spec_cluster(spec, catalogue)


def _spec_cluster(spec: ClusterSpec, catalogue: GpuCatalogue) -> Cluster:
    total_nodes = sum(g.count for g in spec.nodes)
    try:  # bounded before anything is built: a spec of 1000 x 1024 GPUs is refused, not allocated
        for gi, group in enumerate(spec.nodes):
            check_gpu_counts(1, max(group.gpus, 1), f"nodes[{gi}]")
        gpus = sum(g.count * g.gpus for g in spec.nodes)
        if total_nodes > MAX_GPUS or gpus > MAX_GPUS:
            raise ValueError(f"the cluster has {total_nodes:,} nodes and {gpus:,} GPUs; the wizard plans up to "
                             f"{MAX_GPUS:,} GPUs")
    except ValueError as exc:
        raise ClusterSpecError(str(exc)) from None
    nodes: list[ClusterNode] = []
    for gi, group in enumerate(spec.nodes):
        model = None
        if group.gpu is not None:
            model = catalogue.resolve(group.gpu, f"nodes[{gi}].gpu")
        interconnect = group.interconnect or ("nvlink" if model and model.nvlink_gbs else "pcie")
        if interconnect == "nvlink" and model is not None and not model.nvlink_gbs:
            raise ClusterSpecError(f"nodes[{gi}].interconnect: {model.id} has no NVLink; use pcie")
        for k in range(group.count):
            gpus = [
                GPU(index=j, name=model.name if model else (group.gpu or "GPU"),
                    memory_total_bytes=model.memory_bytes if model else None,
                    compute_capability=model.compute_capability if model else None,
                    catalogue_id=model.id if model else None,
                    bf16_tflops=model.bf16_tflops if model else None,
                    memory_bandwidth_gbs=model.memory_bandwidth_gbs if model else None,
                    nvlink_gbs_per_link=model.nvlink_gbs_per_link if model else None)
                for j in range(group.gpus)
            ]
            links = [
                GpuLink(a=a, b=b, kind=LinkKind.NV, nvlinks=(model.nvlinks or 0) if model else 0)
                for a in range(group.gpus) for b in range(a + 1, group.gpus)
            ] if interconnect == "nvlink" else []
            prefix = group.name or (f"node{gi}-" if len(spec.nodes) > 1 else "node")
            ram = None if group.memory_gib is None else int(group.memory_gib * 2**30)
            nodes.append(ClusterNode(name=f"{prefix}{k}", gpu_count=group.gpus, cpus=group.cpus, memory_bytes=ram,
                                     gpus=gpus, links=links, interconnect=interconnect,
                                     network_gbs=None if group.network_gbps is None else group.network_gbps / 8))
    notes = [f"described by a cluster spec{f' ({spec.name})' if spec.name else ''}, not seen: "
             "links are assumed all-to-all for nvlink nodes"]
    return Cluster(source="spec", nodes=nodes, notes=notes)
