"""The hardware a plan runs on: clusters, GPUs, the links between them.

``cluster`` holds the models (``Cluster``, ``ClusterNode``, ``GPU``, ``GpuLink``, the GPU catalogue and
cluster specs); ``gpus`` parses ``--gpus`` specs; ``topology`` turns raw discovery answers (NVML,
nvidia-smi, Ray) into a ``Cluster`` plus findings.
"""

from wizard.core.face import face

# The names callers outside this package use, by the module that defines them.
__getattr__, __all__ = face(__name__, {
    "Cluster": "cluster",
    "ClusterNode": "cluster",
    "ClusterSpecError": "cluster",
    "GIB": "cluster",
    "GpuCatalogue": "cluster",
    "GpuLink": "cluster",
    "LinkKind": "cluster",
    "MIB": "cluster",
    "SOURCES": "cluster",
    "cuda_version_text": "cluster",
    "parse_cluster_spec": "cluster",
    "GpuSpec": "gpus",
    "MAX_GPUS_PER_NODE": "gpus",
    "parse_gpu_spec": "gpus",
    "Discovery": "topology",
    "nvml_to_discovery": "topology",
    "ray_to_discovery": "topology",
})
