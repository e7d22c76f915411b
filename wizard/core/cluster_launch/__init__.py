"""The same plan as cluster launch material. Pure text out; ``wizard.adapters.files.cluster_files`` writes it.

``job`` says what the cluster job is (the target shape, its overrides, the shell and YAML pieces every launcher
shares); ``ray_scripts`` writes the Ray head/worker scripts and ``ray job submit``; ``schedulers`` writes a SLURM
batch script and a KubeRay RayJob; ``material`` renders every file of the targets asked.
"""

from wizard.core.face import face

# The names callers outside this package use, by the module that defines them.
__getattr__, __all__ = face(__name__, {
    "ClusterTarget": "job",
    "TARGETS": "job",
    "cluster_job": "job",
    "target_for": "job",
    "ClusterMaterial": "material",
    "render_cluster": "material",
})
