"""This machine's GPUs and the clusters it can see: NVML (``nvml``, ``gpu_sampler`` for live readings), nvidia-smi's
XML (``nvidia_smi``), one place that picks the source (``discovery``, also for cluster spec files), and a live Ray
cluster asked through a probe (``ray_cluster``). A machine without GPUs is a normal answer, never an exception."""
