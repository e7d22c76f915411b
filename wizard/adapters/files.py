"""File writes that never lose user work: atomic replace, and a backup of what was there."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path


class WriteError(OSError):
    """A file could not be written; the message is one line."""


def backup_path(path: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    candidate = path.with_name(f"{path.name}.{stamp}.bak")
    n = 1
    while candidate.exists():
        candidate = path.with_name(f"{path.name}.{stamp}.{n}.bak")
        n += 1
    return candidate


def write_atomic(path: Path, text: str, mode: int | None = None) -> Path | None:
    """Write ``text`` to ``path`` atomically. An existing, different file is kept as a
    timestamped ``.bak`` next to it; returns that backup's path (None if none was needed)."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        backup = None
        if path.exists():
            if path.read_text(encoding="utf-8", errors="replace") == text:
                if mode is not None:
                    os.chmod(path, mode)
                return None
            backup = backup_path(path)
            os.link(path, backup) if hasattr(os, "link") else None
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            if mode is not None:
                os.chmod(tmp, mode)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        return backup
    except OSError as exc:
        raise WriteError(f"cannot write {path}: {exc.strerror or exc}") from None


def read_text(path: str | Path) -> str:
    """Read a user's file; OSError/UnicodeError become one-line ValueErrors."""
    p = Path(path)
    try:
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ValueError(f"{path}: is a directory, not a file") from None
    except PermissionError:
        raise ValueError(f"{path}: permission denied") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not a UTF-8 text file") from None
    except OSError as exc:
        raise ValueError(f"{path}: {exc.strerror or exc}") from None
