"""The GUI's autosave: the plan being edited, written after every change, removed on a clean exit.

Each window process has a file of its own (``sessions/session-<pid>.json``), so two windows open at once never
overwrite or remove each other's autosave. A file still there at start-up whose process is gone means that session
did not end cleanly; the GUI offers the newest such one back (and takes it over: it is this window's from then on).
A window still open elsewhere keeps its own.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from wizard.adapters.files.disk import WriteError, recover_file_sets, replace_atomic, write_atomic


def state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "verl-wizard"


def session_path() -> Path:
    """This process's autosave."""
    return state_dir() / "sessions" / f"session-{os.getpid()}.json"


def _left_behind() -> list[Path]:
    """Autosaves of sessions that are over without a clean exit (and this process's own), newest first; the
    single ``session.json`` of earlier versions too."""
    from wizard.adapters.machine.procs import alive

    found = []
    try:
        names = os.listdir(state_dir() / "sessions")
    except OSError:
        names = []
    for name in names:
        pid = name[len("session-"):-len(".json")] if name.startswith("session-") and name.endswith(".json") else ""
        if pid.isdigit() and (int(pid) == os.getpid() or not alive(int(pid))):
            found.append(state_dir() / "sessions" / name)
    legacy = state_dir() / "session.json"
    found += [legacy] if legacy.is_file() else []

    def mtime(p: Path) -> float:
        try:
            return p.stat().st_mtime
        except OSError:
            return 0.0

    return sorted(found, key=mtime, reverse=True)


def save_session(doc: dict) -> None:
    """Best effort: an autosave that cannot be written must never interrupt editing."""
    path = session_path()
    try:  # replaced in one step, never deleted first: a crash mid-save leaves the last autosave whole
        replace_atomic(path, json.dumps(doc, indent=1) + "\n")
    except (WriteError, OSError, TypeError, ValueError):
        pass


def load_session() -> dict | None:
    """The newest autosave a session left behind, taken over by this process (moved to its own name, so that a
    second window starting meanwhile does not offer it too); None when there is none."""
    mine = session_path()
    recover_file_sets(mine.parent)  # temporary files of windows killed while they saved
    for path in _left_behind():
        if path != mine:
            try:
                mine.parent.mkdir(parents=True, exist_ok=True)
                os.replace(path, mine)  # one window takes it; another one trying at once finds it gone
            except OSError:
                continue
        try:
            doc = json.loads(mine.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return doc if isinstance(doc, dict) else None
    return None


def clear_session() -> None:
    """This window's autosave removed (a clean close, or a recovery the user declined); other windows' stay."""
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
