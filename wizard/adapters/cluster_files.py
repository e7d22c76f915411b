"""Write cluster launch material to a folder: each file atomically, an earlier different file kept as a backup,
scripts executable. The texts come from ``wizard.core.cluster_launch.ray_scripts``; nothing here decides what they say."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from wizard.adapters.files import WriteError, write_atomic
from wizard.core.cluster_launch.material import ClusterMaterial


@dataclass
class WrittenCluster:
    files: list[str]
    backups: list[str] = field(default_factory=list)


def write_cluster_files(material: ClusterMaterial, out_dir: str | Path) -> WrittenCluster:
    """Write every file of ``material`` into ``out_dir`` (created). WriteError (one line) when it cannot."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise WriteError(f"cannot write into {out}: it is a file, not a folder")
    written, backups = [], []
    for name, text in material.files.items():
        path = out / name
        backup = write_atomic(path, text, mode=0o755 if name in material.executable else 0o644)
        written.append(str(path))
        if backup:
            backups.append(str(backup))
    return WrittenCluster(files=written, backups=backups)


__all__ = ["WrittenCluster", "write_cluster_files"]
