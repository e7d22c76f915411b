"""The GUI's autosave: the plan being edited, written after every change, removed on a clean exit.

A file still there at start-up means the last session did not end cleanly; the GUI offers it back.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from wizard.adapters.files import WriteError, write_atomic


def state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "verl-wizard"


def session_path() -> Path:
    return state_dir() / "session.json"


def save_session(doc: dict) -> None:
    """Best effort: an autosave that cannot be written must never interrupt editing."""
    path = session_path()
    try:
        tmp_text = json.dumps(doc, indent=1) + "\n"
        if path.exists():
            path.unlink()  # an autosave is replaced, not backed up: it is ours, not the user's
        write_atomic(path, tmp_text)
    except (WriteError, OSError):
        pass


def load_session() -> dict | None:
    path = session_path()
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def clear_session() -> None:
    try:
        session_path().unlink()
    except OSError:
        pass
