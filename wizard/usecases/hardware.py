"""Where the GPUs come from: this machine (NVML, else nvidia-smi's XML), a cluster spec file, or a GPU spec
(``8xH100-80GB``) sized from the GPU catalogue.

One place for the CLI's ``detect``/``--gpus``/``--cluster`` and the GUI's Hardware step and GPUs field.
"""

from __future__ import annotations

import dataclasses

from wizard.core.hardware import (
    Cluster,
    ClusterSpecError,
    Discovery,
    GpuCatalogue,
    GpuSpec,
    SOURCES,
    parse_cluster_spec,
)


def discover_this_machine(visible: str | None, catalogue: GpuCatalogue) -> Discovery:
    """NVML first; where NVML cannot start but nvidia-smi answers, its XML."""
    from wizard.adapters.machine.nvidia_smi import NvidiaSmiError, discover_nvidia_smi_xml, run_nvidia_smi_xml
    from wizard.adapters.machine.nvml import discover_nvml

    discovery = discover_nvml(visible, catalogue, use_env=False)
    if discovery.cluster.source == "none":
        text = run_nvidia_smi_xml()
        if text:
            try:
                return discover_nvidia_smi_xml(text, visible, catalogue)
            except NvidiaSmiError:
                pass
    return discovery


def load_cluster_spec_file(path: str, catalogue: GpuCatalogue) -> Discovery:
    """A cluster spec YAML, or a saved ``detect --format json`` answer, as a Discovery; ValueError with a
    one-line reason."""
    from wizard.adapters.files.disk import read_text
    from wizard.adapters.files.user_input import load_yaml

    doc = load_yaml(read_text(path), path)  # JSON is YAML too: a saved `detect --format json` reads the same
    saved = _saved_detection(doc)
    if saved is not None:
        from pydantic import ValidationError

        try:
            found = Discovery.model_validate(saved)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            raise ValueError(f"{path}: a saved 'verl-wizard detect --format json' answer, but {where}: {err['msg']}"
                             ) from None
        if found.cluster.gpu_total == 0:
            why = f" ({found.cluster.notes[0]})" if found.cluster.notes else ""
            raise ValueError(f"{path}: a saved 'verl-wizard detect' answer that found no GPUs{why}; "
                             f"save detect's answer where the GPUs are, or describe the cluster (e.g. 8xH100-80GB)")
        return found
    try:
        cluster = parse_cluster_spec(doc, catalogue)
    except ClusterSpecError as exc:
        raise ValueError(f"{path}: {exc}") from None
    return Discovery(cluster=cluster)


def _saved_detection(doc: object) -> dict | None:
    """What ``verl-wizard detect --format json`` printed on the GPU machine (or its ``cluster`` alone), so a
    cluster detected there can be planned for anywhere; None for a hand-written cluster spec (its nodes
    say ``gpus: 8``, a detected node lists each GPU)."""
    if not isinstance(doc, dict):
        return None
    if _detected_cluster(doc.get("cluster")):
        return {"cluster": doc["cluster"], "findings": doc.get("findings") or []}
    if _detected_cluster(doc):
        return {"cluster": doc}
    return None


def _detected_cluster(doc: object) -> bool:
    if not isinstance(doc, dict) or doc.get("source") not in SOURCES:
        return False
    nodes = doc.get("nodes") or []
    return isinstance(nodes, list) and all(isinstance(n, dict) and isinstance(n.get("gpus"), list) for n in nodes)


def cluster_for_spec(spec: GpuSpec | None, catalogue: GpuCatalogue) -> Cluster | None:
    """The machines a ``--gpus 2x8xH100-80GB`` spec describes (memory from the GPU catalogue), for the
    memory rules; None when the spec names no GPU model. ValueError (one line) for an unknown model."""
    if spec is None or spec.model is None:
        return None
    try:
        model = catalogue.resolve(spec.model).id
        return parse_cluster_spec(f"{spec.nodes}x{spec.gpus_per_node}x{model}", catalogue)
    except ClusterSpecError as exc:
        raise ValueError(str(exc)) from None


def canonical_spec(spec: GpuSpec | None, catalogue: GpuCatalogue) -> GpuSpec | None:
    """``spec`` with its GPU model written as the catalogue's id (``8x4090`` -> ``8xRTX-4090-24GB``), so a plan
    records a name every later reading knows. ValueError (one line, with a did-you-mean) for an unknown model."""
    if spec is None or spec.model is None:
        return spec
    try:
        return dataclasses.replace(spec, model=catalogue.resolve(spec.model).id)
    except ClusterSpecError as exc:
        raise ValueError(str(exc)) from None


def read_gpu_spec(text: str) -> GpuSpec:
    """``8xH100-80GB``, ``2x8xA100``, ``1``: the GPUs a user typed, the model named as the catalogue names it.
    ValueError (one line, a did-you-mean for a model the catalogue does not know)."""
    from wizard.adapters.files.gpu_catalogue import load_gpu_catalogue
    from wizard.core.hardware import parse_gpu_spec

    return canonical_spec(parse_gpu_spec(text), load_gpu_catalogue())


def machines_for(spec: GpuSpec | None) -> Cluster | None:
    """The machines ``spec`` describes, sized from the shipped GPU catalogue; None without a GPU model or for a model
    the catalogue does not know (the check says so through the spec itself)."""
    from wizard.adapters.files.gpu_catalogue import load_gpu_catalogue

    try:
        return _machines(spec, load_gpu_catalogue())
    except ValueError:
        return None


_SPEC_MACHINES: dict = {}


def _machines(spec: GpuSpec | None, catalogue: GpuCatalogue) -> Cluster | None:
    """``cluster_for_spec``, remembered for the last few specs (an edit asks again for the same one)."""
    if spec not in _SPEC_MACHINES:
        if len(_SPEC_MACHINES) > 16:
            _SPEC_MACHINES.clear()
        _SPEC_MACHINES[spec] = cluster_for_spec(spec, catalogue)
    return _SPEC_MACHINES[spec]
