"""Writes are atomic and never destroy what was there."""

import os

import pytest

from wizard.adapters.files import WriteError, read_text, write_atomic


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
