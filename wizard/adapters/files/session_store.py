"""The GUI's autosave: the plan being edited, written after every change, removed on a clean exit.

A file still there at start-up means the last session did not end cleanly; the GUI offers it back.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from wizard.adapters.files.disk import WriteError, replace_atomic, write_atomic


def state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "verl-wizard"


def session_path() -> Path:
    return state_dir() / "session.json"


def save_session(doc: dict) -> None:
    """Best effort: an autosave that cannot be written must never interrupt editing."""
    path = session_path()
    try:  # replaced in one step, never deleted first: a crash mid-save leaves the last autosave whole
        replace_atomic(path, json.dumps(doc, indent=1) + "\n")
    except (WriteError, OSError, TypeError, ValueError):
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


# -- recent plan files and display preferences ------------------------------------------------------
MAX_RECENT = 10


def _prefs_path() -> Path:
    return state_dir() / "prefs.json"


def load_prefs() -> dict:
    try:
        doc = json.loads(_prefs_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def save_prefs(prefs: dict) -> None:
    """Best effort, like the autosave: preferences never interrupt work."""
    path = _prefs_path()
    try:
        replace_atomic(path, json.dumps(prefs, indent=1) + "\n")
    except (WriteError, OSError, TypeError, ValueError):
        pass


def recent_files() -> list[str]:
    """Most recent first; files that are gone are left out."""
    items = load_prefs().get("recent", [])
    return [p for p in items if isinstance(p, str) and Path(p).exists()][:MAX_RECENT]


def add_recent(path: str) -> list[str]:
    prefs = load_prefs()
    full = str(Path(path).resolve())
    items = [full] + [p for p in prefs.get("recent", []) if p != full]
    prefs["recent"] = items[:MAX_RECENT]
    save_prefs(prefs)
    return recent_files()


def save_plan_file(plan_doc: dict, path: str) -> str | None:
    """Write a plan file atomically; returns the backup made of an existing file (WriteError on failure)."""
    backup = write_atomic(Path(path), json.dumps(plan_doc, indent=2) + "\n")
    return str(backup) if backup else None
