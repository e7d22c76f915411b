"""The same plan as cluster launch material: Ray head/worker scripts and ``ray job submit``
(``ray_scripts``), a SLURM batch script and a KubeRay RayJob (``schedulers``). Pure text out.
"""
