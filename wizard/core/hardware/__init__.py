"""The hardware a plan runs on: clusters, GPUs, the links between them.

``cluster`` holds the models (``Cluster``, ``ClusterNode``, ``GPU``, ``GpuLink``, the GPU catalogue and
cluster specs); ``gpus`` parses ``--gpus`` specs; ``topology`` turns raw discovery answers (NVML,
nvidia-smi, Ray) into a ``Cluster`` plus findings.
"""
