"""Write cluster launch material to a folder: all files or none, an earlier different file kept as a backup,
scripts executable. The texts come from ``wizard.core.cluster_launch.ray_scripts``; nothing here decides what they say."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from wizard.adapters.files.disk import WriteError, write_file_set
from wizard.core.cluster_launch import ClusterMaterial


@dataclass
class WrittenCluster:
    files: list[str]
    backups: list[str] = field(default_factory=list)


def write_cluster_files(material: ClusterMaterial, out_dir: str | Path) -> WrittenCluster:
    """Write every file of ``material`` into ``out_dir`` (created). WriteError (one line) when it cannot."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise WriteError(f"cannot write into {out}: it is a file, not a folder")
    done = write_file_set(out, {name: (text, 0o755 if name in material.executable else 0o644)
                                for name, text in material.files.items()})
    return WrittenCluster(files=[str(f) for f in done.files], backups=[str(b) for b in done.backups.values()])


__all__ = ["WrittenCluster", "write_cluster_files"]
