"""Read a launch script from disk: the files it sources next to it, then findings with their lines.

The core reads the script's text; this adapter hands it the files the script sources or tests
for (``source "$SCRIPT_DIR/env.sh"``, ``[ -f env.sh ]``) when they sit in the script's own
folder, reading again until no new file is asked for. Files elsewhere (``/usr/local/...``)
are never read: what they set stays unknown, and the reader says so.
"""

from __future__ import annotations

from pathlib import Path

from wizard.adapters.files.disk import exists, read_text

from wizard.core.findings import Finding, Severity, Stage
from wizard.core.scripts import LaunchScript, MAX_SCRIPT_CHARS, Note, ScriptError, UNREADABLE, read_launch_script

_ROUNDS = 4  # a sourced file may source another one


def read_script(text: str, path: str) -> LaunchScript:
    """The script's launch; ValueError with a one-line reason when it cannot be read as one."""
    script_path = Path(path).resolve()
    files: dict[str, str | None] = {}
    try:
        script = read_launch_script(text, files, str(script_path))
        for _ in range(_ROUNDS):
            if not _look_up(script.wanted_files, files, script_path.parent):
                break
            script = read_launch_script(text, files, str(script_path))
    except ScriptError as exc:
        raise ValueError(f"{path}: {exc}") from None
    return script


def _look_up(wanted: list[str], files: dict[str, str | None], folder: Path) -> bool:
    """Add the wanted files that sit next to the script; True when one was new."""
    new = False
    for name in wanted:
        if name in files:
            continue
        candidate = Path(name) if Path(name).is_absolute() else folder / name
        try:
            resolved = candidate.resolve()
        except (OSError, RuntimeError):
            continue
        if resolved.parent != folder:
            continue  # not next to the script: never read
        files[name] = _read(resolved)
        new = True
    return new


def _read(path: Path) -> str | None:
    """A sourced file's text: None when it is not there, UNREADABLE when it is no regular file of at most
    MAX_SCRIPT_CHARS bytes (a FIFO would block) or not UTF-8."""
    if not exists(path):
        return None
    try:
        return read_text(path, MAX_SCRIPT_CHARS)
    except ValueError:
        return UNREADABLE


def script_findings(script: LaunchScript) -> list[Finding]:
    findings = [_finding(n) for n in script.notes]
    if script.launch_env:
        names = ", ".join(script.launch_env)
        findings.append(Finding(rule="script.launch_env", severity=Severity.INFO, stage=Stage.ADVICE, keys=[],
                                message=f"the launch line sets {names}; kept out of the plan", line=script.line))
    return findings


def _finding(note: Note) -> Finding:
    severity = Severity.INFO if note.severity == "info" else Severity.WARNING
    message = f"{note.file}, line {note.line}: {note.message}" if note.file else note.message
    return Finding(rule=f"script.{note.kind}", severity=severity, stage=Stage.ADVICE, keys=[], message=message,
                   line=None if note.file or not note.line else note.line, data=note.data)
