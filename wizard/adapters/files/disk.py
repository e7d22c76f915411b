"""File writes that never lose user work: atomic replace, and a backup of what was there."""

from __future__ import annotations

import fcntl
import json
import os
import stat
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from wizard.adapters.machine.procs import alive


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


def _stage(folder: Path, name: str, data: str | bytes, mode: int | None, pid_named: bool = False) -> Path:
    """A temporary file in ``folder`` holding ``data``, flushed to disk: what ``os.replace`` then swaps in.
    ``pid_named``: named after this process, so that one killed mid-write can be cleaned up by the next."""
    if pid_named:
        tmp = str(folder / f".{name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    else:
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
    except BaseException:
        os.unlink(tmp)
        raise
    return Path(tmp)


def _mode_of(path: Path, mode: int | None) -> int | None:
    """The mode to give the new file: the one asked for, else the old file's (a chmod +x survives a rewrite)."""
    if mode is not None:
        return mode
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        return None


def _sync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def replace_atomic(path: Path, data: str | bytes, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` in one step, no backup (the wizard's own files: autosave, preferences).

    At every moment the file is either the old one whole or the new one whole; a crash leaves no temp file
    behind but the one being written (removed on any failure)."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _remove_orphans(path)
        tmp = _stage(path.parent, path.name, data, _mode_of(path, mode), pid_named=True)
        try:
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        _sync_dir(path.parent)
    except OSError as exc:
        raise WriteError(f"cannot write {path}: {exc.strerror or exc}") from None


def _remove_orphans(path: Path) -> None:
    """Temporary files of ``path`` left by processes that were killed while writing it."""
    for tmp in path.parent.glob(f".{path.name}.*.tmp"):
        pid = tmp.name[len(path.name) + 2 : -len(".tmp")]
        if pid.isdigit() and int(pid) != os.getpid() and not alive(int(pid)):
            tmp.unlink(missing_ok=True)


def write_atomic(path: Path, text: str, mode: int | None = None) -> Path | None:
    """Write ``text`` to ``path`` atomically. An existing, different file is kept as a
    timestamped ``.bak`` next to it; returns that backup's path (None if none was needed)."""
    return write_file_set(Path(path).parent, {Path(path).name: (text, mode)}).backups.get(Path(path).name)


@dataclass
class FileSet:
    files: list[Path]
    backups: dict[str, Path] = field(default_factory=dict)  # file name -> the backup of what was there


JOURNAL = ".verl-wizard-set"  # .verl-wizard-set.<pid>.json: the renames a write of a set is about to make
LOCK_WAIT_S = 30.0


def write_file_set(folder: str | Path, files: dict[str, tuple[str, int | None]]) -> FileSet:
    """Write several files into ``folder`` as one set: every file is written and flushed beside its target first;
    only when all are on disk are they swapped in (each old, different file kept as a ``.bak``). A failure while
    writing (a full disk) leaves every old file as it was and no temporary file behind.

    Writes into one folder take turns (a lock on the folder): a second ``generate`` into the same folder backs up
    the first one's files instead of racing it. A write killed between its renames (SIGKILL, power loss) left a
    journal of them: the next write into the folder completes them first, and removes the temporary files of
    writes killed earlier. WriteError (one line) on failure."""
    folder = Path(folder)
    staged: dict[str, Path] = {}
    target = folder
    try:
        if folder.exists() and not folder.is_dir():
            raise NotADirectoryError(20, "it is a file, not a folder")
        folder.mkdir(parents=True, exist_ok=True)
        with _folder_lock(folder):
            recover_file_sets(folder)
            for name, (text, mode) in files.items():
                target = folder / name
                if target.exists() and target.read_text(encoding="utf-8", errors="replace") == text:
                    if mode is not None:
                        os.chmod(target, mode)
                    continue
                staged[name] = _stage(folder, name, text, _mode_of(target, mode), pid_named=True)
            target = folder
            journal = folder / f"{JOURNAL}.{os.getpid()}.json"
            if len(staged) > 1:  # one rename is atomic by itself
                replace_atomic(journal, json.dumps({name: tmp.name for name, tmp in staged.items()}))
            try:
                backups = _swap_in(folder, staged)
            finally:
                journal.unlink(missing_ok=True)
            staged.clear()
            _sync_dir(folder)
        return FileSet(files=[folder / name for name in files], backups=backups)
    except OSError as exc:
        raise WriteError(f"cannot write {target}: {exc.strerror or exc}") from None
    finally:
        for tmp in staged.values():
            tmp.unlink(missing_ok=True)


@contextmanager
def _folder_lock(folder: Path) -> Iterator[None]:
    """An exclusive lock on ``folder`` (flock on the folder itself: no file left behind), waited for at most
    ``LOCK_WAIT_S``; released when this process ends, however it ends."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise OSError(11, f"another write into it did not finish within {LOCK_WAIT_S:.0f} s") from None
                time.sleep(0.05)
            except OSError:  # a file system without locks (some network mounts): write as before, unlocked
                break
        yield
    finally:
        os.close(fd)


def recover_file_sets(folder: str | Path) -> list[str]:
    """Finish what writes killed in ``folder`` left: the renames of a set a journal names (its files were all on
    disk before the first rename), then the temporary files of dead writers. The names completed."""
    folder = Path(folder)
    done: list[str] = []
    for journal in folder.glob(f"{JOURNAL}.*.json"):
        pid = journal.name[len(JOURNAL) + 1: -len(".json")]
        if not pid.isdigit() or int(pid) == os.getpid() or alive(int(pid)):
            continue
        try:
            names = json.loads(journal.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            names = {}
        for name, tmp in (names.items() if isinstance(names, dict) else ()):
            if isinstance(name, str) and isinstance(tmp, str) and "/" not in name + tmp and (folder / tmp).is_file():
                os.replace(folder / tmp, folder / name)
                done.append(name)
        journal.unlink(missing_ok=True)
    for tmp in folder.glob(".*.tmp"):
        pid = tmp.name[:-len(".tmp")].rsplit(".", 1)[-1]
        if pid.isdigit() and int(pid) != os.getpid() and not alive(int(pid)):
            tmp.unlink(missing_ok=True)
    return done


def _swap_in(folder: Path, staged: dict[str, Path]) -> dict[str, Path]:
    """Back up the files about to change (hard links: no data copied), then rename the new ones over them;
    if a rename fails, the ones already swapped get their old content back."""
    backups: dict[str, Path] = {}
    for name in staged:
        target = folder / name
        if target.exists():
            backups[name] = backup_path(target)
            os.link(target, backups[name])
    done: list[str] = []
    try:
        for name, tmp in staged.items():
            os.replace(tmp, folder / name)
            done.append(name)
    except BaseException:
        for name in done:  # back to how it was: the old file, or none
            if name in backups:
                os.replace(backups.pop(name), folder / name)
            else:
                (folder / name).unlink(missing_ok=True)
        for backup in backups.values():
            backup.unlink(missing_ok=True)
        raise
    return backups


USER_FILE_LIMIT = 16 * 1024 * 1024  # a config, script, plan or cluster spec: the largest verl YAML is ~40 KiB


def _size(n: int) -> str:
    return f"{n / 1024 / 1024:,.1f} MiB" if n >= 1024 * 1024 else f"{n:,} bytes"


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "named pipe (FIFO)"), (stat.S_ISCHR, "character device"),
                       (stat.S_ISBLK, "block device"), (stat.S_ISSOCK, "socket")):
        if test(mode):
            return name
    return "special file"


def _refuse_special(path, st: os.stat_result) -> None:
    if stat.S_ISDIR(st.st_mode):
        raise ValueError(f"{path}: is a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"{path}: a {_kind(st.st_mode)}, not a regular file (only regular files are read)")


def read_bytes(path: str | Path, limit: int = USER_FILE_LIMIT) -> bytes:
    """A user's file, read only when it is a regular file (a FIFO would block forever, ``/dev/zero`` never ends,
    behind a symbolic link or not) of at most ``limit`` bytes; anything else is a one-line ValueError that names
    the limit. The type is checked before opening (opening some devices acts) and again on what was opened."""
    try:
        _refuse_special(path, os.stat(path))
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file") from None
    except PermissionError:
        raise ValueError(f"{path}: permission denied") from None
    except ValueError as exc:
        if "null" in str(exc):
            raise ValueError(f"{str(path)!r}: not a file name (it holds a NUL byte)") from None
        raise
    except OSError as exc:
        raise ValueError(f"{path}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        _refuse_special(path, st)  # swapped for a FIFO between the look and the open
        if st.st_size > limit:
            raise ValueError(f"{path}: {_size(st.st_size)} is more than the {_size(limit)} read of such a file")
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:  # it grew while read
            raise ValueError(f"{path}: more than the {_size(limit)} read of such a file")
        return b"".join(chunks)
    except OSError as exc:
        raise ValueError(f"{path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def read_text(path: str | Path, limit: int = USER_FILE_LIMIT, errors: str = "strict") -> str:
    """A user's file as UTF-8 text, bounded as ``read_bytes``; OSError/UnicodeError become one-line ValueErrors."""
    data = read_bytes(path, limit)
    try:
        text = data.decode("utf-8", errors=errors)
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not a UTF-8 text file") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")  # as a file opened as text reads it


def _stat(path) -> os.stat_result | None:
    """``os.stat`` of a path a user typed, or None for anything that is not there to read: missing, a name too
    long for the file system, a NUL byte, no permission (``Path.exists`` raises for some of these)."""
    try:
        return os.stat(path)
    except (OSError, ValueError):
        return None


def exists(path) -> bool:
    return _stat(path) is not None


def is_dir(path) -> bool:
    st = _stat(path)
    return st is not None and stat.S_ISDIR(st.st_mode)


def special_file(path) -> str | None:
    """What ``path`` is when it is there but not a regular file or a folder (a FIFO, a device, a socket, through
    symbolic links): reading it would block or never end. None otherwise."""
    st = _stat(path)
    if st is None or stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode):
        return None
    return _kind(st.st_mode)


def is_file(path) -> bool:
    st = _stat(path)
    return st is not None and stat.S_ISREG(st.st_mode)
