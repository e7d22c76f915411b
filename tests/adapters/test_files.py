"""Writes are atomic and never destroy what was there."""

import os

import pytest

from wizard.adapters.files.disk import WriteError, read_text, write_atomic


def test_new_file_then_identical_rewrite_makes_no_backup(tmp_path):
    path = tmp_path / "a" / "run.sh"
    assert write_atomic(path, "x\n", mode=0o755) is None
    assert write_atomic(path, "x\n") is None
    assert os.access(path, os.X_OK) and list(tmp_path.rglob("*.bak")) == []


def test_changed_file_keeps_the_old_one(tmp_path):
    path = tmp_path / "run.sh"
    path.write_text("mine\n")
    backup = write_atomic(path, "new\n")
    assert backup.read_text() == "mine\n" and path.read_text() == "new\n"
    second = write_atomic(path, "newer\n")
    assert second != backup and second.read_text() == "new\n"


def test_unwritable_target_is_a_one_line_error(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(WriteError, match="cannot write"):
        write_atomic(tmp_path / "f" / "x", "y")


def test_reading_a_directory_or_binary_is_a_reason(tmp_path):
    with pytest.raises(ValueError, match="is a directory"):
        read_text(tmp_path)
    (tmp_path / "b").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ValueError, match="not a UTF-8"):
        read_text(tmp_path / "b")


def test_a_full_disk_mid_generate_leaves_the_old_files_whole(tmp_path, monkeypatch):
    import errno

    import wizard.adapters.files.disk as files
    from wizard.usecases.plans import preset_plan
    from wizard.usecases.writing import write_plan_files

    old = {name: f"old {name}\n" for name in ("run.sh", "config.yaml", "plan.json")}
    for name, text in old.items():
        (tmp_path / name).write_text(text)
    real_stage, calls = files._stage, []

    def stage_until_full(folder, name, data, mode, **kw):
        calls.append(name)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_stage(folder, name, data, mode, **kw)

    monkeypatch.setattr(files, "_stage", stage_until_full)
    with pytest.raises(WriteError, match="No space left on device"):
        write_plan_files(preset_plan("grpo-1gpu-smoke"), tmp_path)
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == old  # no new file, no temp file, no backup


def test_a_rename_failing_midway_puts_back_what_was_there(tmp_path, monkeypatch):
    import wizard.adapters.files.disk as files

    (tmp_path / "a").write_text("old a\n")
    real_replace, calls = os.replace, []

    def replace_once(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise OSError(5, "Input/output error")
        return real_replace(src, dst)

    monkeypatch.setattr(files.os, "replace", replace_once)
    with pytest.raises(WriteError):
        files.write_file_set(tmp_path, {"a": ("new a\n", None), "b": ("new b\n", None)})
    monkeypatch.undo()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a"] and (tmp_path / "a").read_text() == "old a\n"


def test_a_rewrite_keeps_the_files_mode(tmp_path):
    path = tmp_path / "run.sh"
    write_atomic(path, "one\n")
    path.chmod(0o750)
    write_atomic(path, "two\n")
    assert path.stat().st_mode & 0o777 == 0o750


def test_the_autosave_survives_being_killed_while_it_saves(tmp_path):
    """A process saving its session in a loop is killed at random moments: its whole autosave is always there, and
    the next window's start removes the temporary files the kills left."""
    import json
    import subprocess
    import sys

    from tests.helpers.procs import killed_while_writing

    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path))
    saver = ("from wizard.adapters.files.session_store import save_session\n"
             "i = 0\n"
             "while True:\n"
             "    i += 1\n"
             "    save_session({'n': i, 'pad': 'x' * 200000})\n")
    state = tmp_path / "verl-wizard" / "sessions"
    for mine in killed_while_writing(saver, [], env, lambda proc: state / f"session-{proc.pid}.json", times=15,
                                     spread=5):
        assert json.loads(mine.read_text())["n"] >= 1
    subprocess.run([sys.executable, "-c", "from wizard.adapters.files.session_store import load_session; "
                    "load_session()"], env=env, check=True)
    assert [p.name for p in state.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "dev-urandom", "too-big"])
def test_a_users_file_is_read_only_when_regular_and_bounded(tmp_path, kind):
    # issue 31: a FIFO hung every reader; /dev/zero behind a symlink was read until memory ran out
    path = tmp_path / "run.yaml"
    if kind == "fifo":
        os.mkfifo(path)
        words = "named pipe (FIFO), not a regular file"
    elif kind == "too-big":
        with open(path, "wb") as fh:
            fh.truncate(17 * 1024 * 1024)  # sparse: 17 MiB without writing them
        words = "17.0 MiB is more than the 16.0 MiB"
    else:
        path.symlink_to("/dev/zero" if kind == "dev-zero" else "/dev/urandom")
        words = "character device, not a regular file"
    with pytest.raises(ValueError) as exc:
        read_text(path)
    assert words in str(exc.value) and "\n" not in str(exc.value)


def test_a_bounded_read_reads_a_regular_file_as_text(tmp_path):
    path = tmp_path / "run.sh"
    path.write_bytes(b"a\r\nb\n")
    assert read_text(path) == "a\nb\n"  # as a file opened as text reads it
    with pytest.raises(ValueError, match="5 bytes is more than the 4 bytes"):
        read_text(path, limit=4)
