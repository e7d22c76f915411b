"""``verl-wizard detect``: the GPUs, their links and the nodes verl would run on.

Exit codes follow the CLI contract: 0 no errors, 1 problems found, 2 bad input (one line). No GPU is not a
problem: detect explains it and exits 0.
"""

from __future__ import annotations

import json
import os

from wizard.cli._common import EXIT_ERRORS, EXIT_OK, UsageError, cluster_spec, findings_text, ray_discovery
from wizard.core.findings import sort_findings



def add_parser(subparsers) -> None:
    d = subparsers.add_parser("detect", help="show the GPUs, links and nodes verl would run on")
    source = d.add_mutually_exclusive_group()
    source.add_argument("--nvidia-smi-xml", metavar="FILE", help="read a saved `nvidia-smi -q -x` instead of NVML")
    source.add_argument("--ray-address", metavar="ADDR", help="a running Ray cluster's head, HOST:PORT (or auto)")
    source.add_argument("--cluster", metavar="FILE", help="a cluster spec (YAML), e.g. `cluster: 4x8xH100-80GB`")
    source.add_argument("--catalogue", action="store_true", help="list the GPU models the wizard knows")
    d.add_argument("--format", choices=("text", "json"), default="text")
    d.add_argument("--timeout", type=float, default=30.0, metavar="S", help="how long a Ray cluster may take (30)")
    d.set_defaults(handler=run_detect)


def run_detect(args) -> int:
    from wizard.adapters.files.gpu_catalogue import load_gpu_catalogue

    catalogue = load_gpu_catalogue()
    if args.catalogue:
        return _print_catalogue(catalogue, args.format)
    if args.timeout <= 0:
        raise UsageError("--timeout must be more than 0 seconds")
    discovery = _discover(args, catalogue)
    discovery.findings = sort_findings(discovery.findings)
    if args.format == "json":
        print(json.dumps(discovery.to_json()))
    else:
        print(render_discovery(discovery))
    return EXIT_OK if discovery.ok else EXIT_ERRORS


def _discover(args, catalogue):
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if args.nvidia_smi_xml:
        from wizard.adapters.machine.nvidia_smi import NvidiaSmiError, discover_nvidia_smi_xml
        from wizard.usecases.hardware import read_nvidia_smi_xml

        try:
            return discover_nvidia_smi_xml(read_nvidia_smi_xml(args.nvidia_smi_xml), visible, catalogue,
                                           origin=args.nvidia_smi_xml)
        except NvidiaSmiError as exc:
            raise UsageError(str(exc)) from None
    if args.ray_address:
        return ray_discovery(args.ray_address, timeout=args.timeout)
    if args.cluster:
        return cluster_spec(args.cluster, catalogue)
    return _this_machine(visible, catalogue)


def _this_machine(visible, catalogue):
    from wizard.usecases.hardware import discover_this_machine

    return discover_this_machine(visible, catalogue)


def _print_catalogue(catalogue, fmt: str) -> int:
    if fmt == "json":
        print(json.dumps(catalogue.model_dump(mode="json")))
        return EXIT_OK
    print(f"{'id':20} {'memory':>7} {'GB/s':>6} {'NVLink':>8} bf16 fp8  cc    source")
    for g in catalogue.gpus:
        nv = f"{g.nvlink_gbs:g}" if g.nvlink_gbs else "-"
        print(f"{g.id:20} {g.memory_gb:>5g}GB {g.memory_bandwidth_gbs:>6g} {nv:>8} {'yes' if g.bf16 else 'no':4} "
              f"{'yes' if g.fp8 else 'no':4} {g.compute_capability[0]}.{g.compute_capability[1]:<3} "
              f"{g.source} ({g.date})")
    return EXIT_OK


# ------------------------------------------------------------------------------------------------
# Text output


def _gib(n: int | None) -> str:
    return "?" if n is None else f"{n / 1024**3:.1f} GiB"


def render_discovery(discovery) -> str:
    c = discovery.cluster
    lines = []
    facts = [f"driver {c.driver_version}" if c.driver_version else "",
             f"CUDA {c.cuda_driver_version}" if c.cuda_driver_version else "",
             f"Ray {c.ray_version}" if c.ray_version else "",
             f"CUDA_VISIBLE_DEVICES={c.visible_devices!r}" if c.visible_devices is not None else ""]
    facts_text = ", ".join(x for x in facts if x)
    lines.append(f"source: {c.source}{f' ({facts_text})' if facts_text else ''}: {c.gpu_total} GPU(s) on "
                 f"{sum(n.alive for n in c.nodes)} node(s)")
    for node in c.nodes:
        extra = [f"{node.cpus:g} CPUs" if node.cpus is not None else "",
                 f"{node.memory_bytes / 2**30:.0f} GiB RAM" if node.memory_bytes else "", node.address or "",
                 node.interconnect or "", "" if node.alive else "DEAD"]
        lines.append(f"node {node.name}: {node.gpu_count} GPU(s)" + "".join(f", {x}" for x in extra if x))
        for g in node.gpus:
            cc = f"cc {g.compute_capability[0]}.{g.compute_capability[1]}" if g.compute_capability else ""
            free = f" ({_gib(g.memory_free_bytes)} free)" if g.memory_free_bytes is not None else ""
            mig = {True: "MIG on", False: "", None: ""}[g.mig_enabled]
            busy = f"{len(g.processes)} process(es)" if g.processes else ""
            parts = [f"  GPU{g.index}", g.name + (f" [{g.catalogue_id}]" if g.catalogue_id else ""),
                     _gib(g.memory_total_bytes) + free, cc, f"PCI {g.pci_bus_id}" if g.pci_bus_id else "",
                     f"NUMA {g.numa_node}" if g.numa_node is not None else "",
                     f"CPUs {g.cpu_affinity}" if g.cpu_affinity else "", mig, busy]
            lines.append("  ".join(p for p in parts if p))
        if len(node.gpus) > 1:
            lines += _matrix(node)
    for note in c.notes:
        lines.append(f"note: {note}")
    text = "\n".join(lines)
    return text + "\n" + findings_text(discovery.findings, "hardware") if discovery.findings else text


def _matrix(node) -> list[str]:
    """The link matrix as ``nvidia-smi topo -m`` prints it, plus the NVLink islands."""
    n = len(node.gpus)
    head = "        " + "".join(f"{f'GPU{j}':>6}" for j in range(n))
    rows = [head]
    for i in range(n):
        cells = ["X" if i == j else (node.link(i, j).label if node.link(i, j) else "?") for j in range(n)]
        rows.append(f"  {f'GPU{i}':6}" + "".join(f"{c:>6}" for c in cells))
    islands = node.nvlink_islands()
    if any(len(x) > 1 for x in islands):
        rows.append("  NVLink islands: " + " ".join("[" + ",".join(map(str, x)) + "]" for x in islands))
    return rows
