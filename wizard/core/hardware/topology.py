"""Turn raw discovery answers into a ``Cluster`` plus findings. Pure: the adapters gather, this decides.

The raw NVML shape is the one ``shared/fixtures/gpu/capture_nvml.py`` records (``*.nvml.json``), so a
capture from any GPU machine can be replayed here; ``nvidia-smi -q -x`` is translated into the same
shape by its adapter. Failed NVML queries are kept as ``"ERR ..."`` strings and read as unknown.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from wizard.core.hardware.cluster import (
    GPU,
    MIB,
    P2P,
    Cluster,
    GpuCatalogue,
    GpuProcess,
    GpuLink,
    LinkKind,
    ClusterNode,
    cpu_list_text,
    cuda_version_text,
)
from wizard.core.findings import Finding, Severity, Stage, has_errors

# nvmlGpuTopologyLevel_t -> the matrix label; INTERNAL (two GPUs on one board) reads as one bridge
_ANCESTOR = {0: LinkKind.PIX, 10: LinkKind.PIX, 20: LinkKind.PXB, 30: LinkKind.PHB, 40: LinkKind.NODE, 50: LinkKind.SYS}
# nvmlGpuP2PStatus_t
_P2P = {0: P2P.OK, 1: P2P.NOT_SUPPORTED, 2: P2P.NOT_SUPPORTED, 3: P2P.NOT_SUPPORTED, 4: P2P.DISABLED,
        5: P2P.NOT_SUPPORTED, 6: P2P.UNKNOWN}
NVLINK_DEVICE_SWITCH = 2  # nvmlIntNvLinkDeviceType_t


class Discovery(BaseModel):
    """What ``detect`` answers: the cluster and what the user should do about it."""

    model_config = ConfigDict(extra="forbid")

    cluster: Cluster
    findings: list[Finding] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not has_errors(self.findings)

    def to_json(self) -> dict:
        return {"ok": self.ok, "cluster": self.cluster.model_dump(mode="json"),
                "findings": [f.to_json() for f in self.findings]}


def _finding(rule: str, severity: Severity, message: str, fix: str | None = None, stage: Stage = Stage.RUNTIME,
             keys: list[str] | None = None) -> Finding:
    return Finding(rule=rule, severity=severity, stage=stage, keys=keys or [], message=message, fix=fix)


def _known(value):
    """NVML answers that failed are recorded as 'ERR ...' strings (or {'error': ...}): unknown."""
    if isinstance(value, str) and value.startswith("ERR"):
        return None
    if isinstance(value, dict) and "error" in value:
        return None
    return value


# ------------------------------------------------------------------------------------------------
# CUDA_VISIBLE_DEVICES


def select_visible(devices: list[dict], visible: str | None) -> tuple[list[int], list[Finding]]:
    """The physical indices CUDA would expose, in CUDA's order, for ``CUDA_VISIBLE_DEVICES=visible``.

    CUDA reads the list left to right: integers are NVML indices, ``GPU-...`` entries are UUIDs or
    unique UUID prefixes; at the first entry it cannot match it stops and ignores the rest.
    """
    count = len(devices)
    if visible is None:
        return list(range(count)), []
    text = visible.strip()
    chosen: list[int] = []
    findings: list[Finding] = []
    tokens = [t.strip() for t in text.split(",")] if text else []
    for pos, token in enumerate(tokens):
        index, why = _match_token(token, devices)
        if index is None:
            ignored = ",".join(tokens[pos:])
            findings.append(_finding(
                "hw.visible_devices", Severity.ERROR,
                f"CUDA_VISIBLE_DEVICES={visible!r}: {why}; CUDA ignores {ignored!r}, so processes see "
                f"{len(chosen)} of the {count} GPUs",
                fix=f"export CUDA_VISIBLE_DEVICES={','.join(str(i) for i in range(count)) or '<nothing: no GPU here>'}"
                    " (or the indices/UUIDs `verl-wizard detect` lists)"))
            break
        if index in chosen:
            findings.append(_finding(
                "hw.visible_devices", Severity.ERROR,
                f"CUDA_VISIBLE_DEVICES={visible!r} names GPU {index} twice; CUDA does not accept a repeated device",
                fix="list each GPU once"))
            break
        chosen.append(index)
    if not findings and chosen and len(chosen) < count:
        findings.append(_finding(
            "hw.visible_devices", Severity.INFO,
            f"CUDA_VISIBLE_DEVICES={visible!r} shows {len(chosen)} of the {count} GPUs on this machine; "
            f"Ray and verl will see {len(chosen)}",
            fix="unset CUDA_VISIBLE_DEVICES to use them all", stage=Stage.ADVICE))
    return chosen, findings


def _match_token(token: str, devices: list[dict]) -> tuple[int | None, str]:
    if token.lstrip("-").isdigit():
        i = int(token)
        if 0 <= i < len(devices):
            return i, ""
        return None, f"there is no GPU {i} (this machine has {len(devices)}: 0..{len(devices) - 1})" if devices \
            else f"there is no GPU {i} (this machine has none)"
    if token.upper().startswith("MIG-"):
        return None, f"{token!r} is a MIG instance; the wizard plans whole GPUs (MIG instances are not described yet)"
    if token.upper().startswith("GPU-"):
        hits = [i for i, d in enumerate(devices) if str(d.get("uuid") or "").lower().startswith(token.lower())]
        if len(hits) == 1:
            return hits[0], ""
        if len(hits) > 1:
            return None, f"{token!r} is the start of {len(hits)} GPU UUIDs; give more of it"
        return None, f"no GPU has a UUID starting with {token!r}"
    return None, f"{token!r} is neither a GPU index nor a GPU UUID"


# ------------------------------------------------------------------------------------------------
# NVML (and nvidia-smi, translated to the same shape)


def nvml_to_discovery(raw: dict, visible: str | None = None, catalogue: GpuCatalogue | None = None,
                      source: str = "nvml") -> Discovery:
    """A Cluster of this one machine from raw NVML answers, honouring ``CUDA_VISIBLE_DEVICES``."""
    host = raw.get("hostname") or "localhost"
    error = raw.get("error")
    if error:
        return _no_gpu(host, error, source, visible, raw)
    devices = [d for d in raw.get("devices") or [] if isinstance(d, dict) and "error" not in d]
    chosen, findings = select_visible(devices, visible)
    gpus = [_gpu(cuda_index, phys, devices[phys], catalogue) for cuda_index, phys in enumerate(chosen)]
    links = _links(raw, devices, chosen)
    node = ClusterNode(name=host, gpu_count=len(gpus), gpus=gpus, links=links, memory_bytes=_ram(raw))
    notes: list[str] = []
    if not devices:
        notes.append("the NVIDIA driver answers but reports no GPU on this machine")
    cluster = Cluster(source=source, nodes=[node], driver_version=_known(raw.get("driver")),
                      cuda_driver_version=cuda_version_text(_known(raw.get("cuda_driver"))),
                      visible_devices=visible, notes=notes)
    findings += gpu_findings(cluster)
    if not gpus:
        findings.append(_finding("hw.no_gpu", Severity.INFO, _no_gpu_text(notes, visible, len(devices)),
                                 fix="plan for other hardware with --cluster FILE or --gpus 8xH100-80GB",
                                 stage=Stage.ADVICE))
    return Discovery(cluster=cluster, findings=findings)


def _no_gpu_text(notes: list[str], visible: str | None, physical: int) -> str:
    if physical and visible is not None:
        which = "the only GPU" if physical == 1 else f"all {physical} GPUs"
        return f"CUDA_VISIBLE_DEVICES={visible!r} hides {which} on this machine: verl would run without a GPU"
    return "no GPU on this machine: the wizard can still plan and check for other hardware"


_NO_GPU_WHY = {
    "library_not_found": "no NVIDIA driver on this machine (NVML's library libnvidia-ml.so.1 is not installed)",
    "driver_not_loaded": "the NVIDIA driver is installed but not loaded (no GPU, or the kernel module did not start)",
    "no_permission": "this user may not query the GPUs (NVML: insufficient permissions)",
    "no_nvml_module": "the pynvml module (package nvidia-ml-py) is not installed in the wizard's Python",
}


def _ram(raw: dict) -> int | None:
    """The host RAM the adapter read beside NVML (bounds CPU offload: memory.host)."""
    v = raw.get("host_memory")
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


def _no_gpu(host: str, error: dict, source: str, visible: str | None, raw: dict | None = None) -> Discovery:
    kind = error.get("kind", "unknown")
    why = _NO_GPU_WHY.get(kind) or f"NVML could not start: {error.get('message')}"
    fix = "pip install nvidia-ml-py" if kind == "no_nvml_module" else (
        "on a GPU machine, install the NVIDIA driver (nvidia-smi must work); elsewhere plan with --cluster FILE "
        "or --gpus 8xH100-80GB")
    cluster = Cluster(source="none", nodes=[ClusterNode(name=host, gpu_count=0, memory_bytes=_ram(raw or {}))],
                      visible_devices=visible, notes=[why])
    finding = _finding("hw.no_gpu", Severity.INFO, f"{why}; the wizard can still plan and check for other hardware",
                       fix=fix, stage=Stage.ADVICE)
    return Discovery(cluster=cluster, findings=[finding])


def _gpu(cuda_index: int, phys: int, d: dict, catalogue: GpuCatalogue | None) -> GPU:
    memory = _known(d.get("memory")) or {}
    cc = _known(d.get("cc"))
    mig = _known(d.get("mig"))
    numa = _known(d.get("numa"))
    affinity = _known(d.get("cpu_affinity"))
    procs = _known(d.get("procs"))
    name = str(_known(d.get("name")) or "unknown GPU")
    entry = catalogue.find(name) if catalogue else None
    return GPU(
        index=cuda_index,
        physical_index=phys,
        name=name,
        uuid=_known(d.get("uuid")),
        pci_bus_id=_known(d.get("pci")),
        memory_total_bytes=memory.get("total") or (entry.memory_bytes if entry else None),
        memory_free_bytes=memory.get("free"),
        compute_capability=tuple(cc) if isinstance(cc, (list, tuple)) and len(cc) == 2 else (
            entry.compute_capability if entry else None),
        mig_enabled=bool(mig[0]) if isinstance(mig, (list, tuple)) and mig else None,
        numa_node=numa if isinstance(numa, int) and numa >= 0 else None,
        cpu_affinity=cpu_list_text(affinity) if isinstance(affinity, list) and affinity else None,
        processes=_processes(procs),
        catalogue_id=entry.id if entry else None,
        bf16_tflops=entry.bf16_tflops if entry else None,
        memory_bandwidth_gbs=entry.memory_bandwidth_gbs if entry else None,
        nvlink_gbs_per_link=entry.nvlink_gbs_per_link if entry else None,
    )


def _processes(procs) -> list[GpuProcess] | None:
    if isinstance(procs, list):
        return [GpuProcess(pid=p["pid"], used_memory_bytes=p.get("used")) for p in procs if isinstance(p, dict)]
    if procs == 0:  # the first fixture recorded only a count
        return []
    return None


def _links(raw: dict, devices: list[dict], chosen: list[int]) -> list[GpuLink]:
    p2p = _known(raw.get("p2p")) or {}
    pci_to_phys = {str(d.get("pci") or "").lower(): i for i, d in enumerate(devices)}
    links: list[GpuLink] = []
    for a, pa in enumerate(chosen):
        for b in range(a + 1, len(chosen)):
            pb = chosen[b]
            row = p2p.get(f"{pa}-{pb}") or p2p.get(f"{pb}-{pa}") or {}
            nv = min(_nvlinks_to(devices, pa, pb, pci_to_phys, row), _nvlinks_to(devices, pb, pa, pci_to_phys, row))
            ancestor = _known(row.get("ancestor"))
            if nv:
                kind = LinkKind.NV
            elif isinstance(ancestor, int) and ancestor in _ANCESTOR:
                kind = _ANCESTOR[ancestor]
            else:
                continue  # NVML did not say: leave the pair out rather than guess
            links.append(GpuLink(a=a, b=b, kind=kind, nvlinks=nv, p2p_read=_p2p(row.get("read")),
                              p2p_write=_p2p(row.get("write"))))
    return links


def _nvlinks_to(devices: list[dict], src: int, dst: int, pci_to_phys: dict[str, int], row: dict) -> int:
    """Active NVLinks from GPU src that reach GPU dst, directly or (NVSwitch systems) through a switch."""
    active = [x for x in devices[src].get("nvlink") or [] if isinstance(x, dict) and x.get("state") == 1]
    direct = sum(1 for x in active if pci_to_phys.get(str(x.get("remote_pci") or "").lower()) == dst)
    if direct:
        return direct
    if _p2p(row.get("nvlink")) is P2P.OK:
        switched = [x for x in active if x.get("remote_type") == NVLINK_DEVICE_SWITCH
                    or str(x.get("remote_pci") or "").lower() not in pci_to_phys]
        return len(switched)
    return 0


def _p2p(value) -> P2P:
    return _P2P.get(value, P2P.UNKNOWN) if isinstance(value, int) else P2P.UNKNOWN


def gpu_findings(cluster: Cluster) -> list[Finding]:
    """What discovery alone can say is wrong with the GPUs (placement rules say the rest)."""
    out: list[Finding] = []
    for node in cluster.nodes:
        for gpu in node.gpus:
            if gpu.mig_enabled:
                out.append(_finding(
                    "hw.mig", Severity.WARNING,
                    f"GPU {gpu.index} ({gpu.name}) on {node.name} has MIG enabled: CUDA sees MIG instances, not the "
                    "whole GPU, and verl's rollout engines expect whole GPUs",
                    fix=f"sudo nvidia-smi -i {gpu.physical_index if gpu.physical_index is not None else gpu.index} -mig 0"
                        " (then reset the GPU)"))
            used = sum(p.used_memory_bytes or 0 for p in gpu.processes or [])
            if gpu.processes:
                out.append(_finding(
                    "hw.busy", Severity.WARNING,
                    f"GPU {gpu.index} on {node.name} is in use by {len(gpu.processes)} process(es) "
                    f"(pids {', '.join(str(p.pid) for p in gpu.processes[:5])}) holding {used / MIB / 1024:.1f} GiB; "
                    "vLLM's gpu_memory_utilization counts from the total, so the rollout may not fit",
                    fix="stop those processes, or lower actor_rollout_ref.rollout.gpu_memory_utilization"))
        for link in node.links:
            if link.p2p_read in (P2P.NOT_SUPPORTED, P2P.DISABLED):
                out.append(_finding(
                    "hw.p2p", Severity.WARNING,
                    f"GPUs {link.a} and {link.b} on {node.name} cannot reach each other peer-to-peer "
                    f"({link.label}, P2P read {link.p2p_read.value}): NCCL falls back to copies through host memory, "
                    "so tensor parallelism across them is slow",
                    fix="keep tensor-parallel groups inside one NVLink island; NCCL_P2P_DISABLE=1 avoids hangs on "
                        "machines whose P2P is broken"))
    return out


# ------------------------------------------------------------------------------------------------
# Ray


def ray_to_discovery(nodes: list[dict], ray_version: str | None, address: str) -> Discovery:
    """A Cluster from ``ray.nodes()``: one Node per raylet, GPUs as Ray declares them (count, not model)."""
    out: list[ClusterNode] = []
    for n in nodes:
        res = n.get("Resources") or {}
        alive = bool(n.get("Alive"))
        out.append(ClusterNode(
            name=str(n.get("NodeName") or n.get("NodeManagerHostname") or n.get("NodeID", "?"))[:64],
            address=n.get("NodeManagerAddress"),
            alive=alive,
            gpu_count=int(res.get("GPU", 0)) if alive else 0,
            cpus=float(res["CPU"]) if alive and "CPU" in res else None,
            # Ray's "memory" resource is what it left after its object store (30 % by default) of the RAM free when
            # the raylet started: the two together are that RAM, what its memory monitor's 95 % comes closest to
            memory_bytes=int(res["memory"] + res.get("object_store_memory", 0)) if alive and "memory" in res else None,
        ))
    seen: dict[str, int] = {}
    for n, node in zip(nodes, out):  # several raylets on one host share its name: tell them apart
        seen[node.name] = seen.get(node.name, 0) + 1
    for n, node in zip(nodes, out):
        if seen[node.name] > 1:
            node.name = f"{node.name}/{str(n.get('NodeID', ''))[:8]}"
    out.sort(key=lambda x: (not x.alive, x.address or "", x.name))
    cluster = Cluster(source="ray", nodes=out, ray_version=ray_version,
                      notes=[f"Ray cluster at {address}: {sum(x.alive for x in out)} node(s) alive"])
    findings: list[Finding] = []
    dead = [x for x in out if not x.alive]
    if dead:
        findings.append(_finding(
            "ray.node_dead", Severity.WARNING,
            f"{len(dead)} Ray node(s) are dead ({', '.join(x.address or x.name for x in dead)}); their GPUs are not "
            f"counted: Ray offers {cluster.gpu_total} GPUs",
            fix="restart them with `ray start --address=HEAD:PORT`, or plan with the GPUs that are alive"))
    alive = [x for x in out if x.alive]
    counts = sorted({x.gpu_count for x in alive if x.gpu_count})
    if len(counts) > 1:
        findings.append(_finding(
            "ray.uneven_nodes", Severity.WARNING,
            f"the alive Ray nodes offer different GPU counts ({', '.join(map(str, counts))}); verl places "
            f"trainer.n_gpus_per_node on every node, so at most {counts[0]} per node are usable everywhere",
            fix=f"trainer.n_gpus_per_node={counts[0]}", keys=["trainer.n_gpus_per_node"]))
    if alive and not cluster.gpu_total:
        findings.append(_finding(
            "ray.no_gpus", Severity.WARNING, f"the Ray cluster at {address} declares no GPU resources",
            fix="start the raylets on GPU machines, or with --num-gpus=N"))
    return Discovery(cluster=cluster, findings=findings)
