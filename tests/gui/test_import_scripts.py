"""Importing the launch scripts users have, in the window: every script of the corpus (verl's own examples, main and
the release branch) ends with the Review step showing that script's values; a script the reader refuses changes
nothing and says why in one line."""

import os
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from wizard.adapters.files.sources import load_source  # noqa: E402

CORPUS = Path(__file__).resolve().parents[1] / "data" / "verl_scripts"
# other/ holds launches of other entry points (main_ppo_sync, fully_async_main): the reader refuses those by design
SCRIPTS = sorted(p for p in CORPUS.rglob("*.sh") if "other" not in p.relative_to(CORPUS).parts)


def _marks(path: Path) -> list[str]:
    """Overrides of the script that the plan keeps as written: they must appear in Review's run.sh."""
    source = load_source(str(path))
    return [o.split("=", 1)[0].lstrip("+~") for o in source.overrides if "=" in o][:5]


def test_every_corpus_script_imports_and_review_shows_its_values(window):
    start, review = window.start_page, window.page("review")
    assert len(SCRIPTS) >= 200
    shown, refused = 0, []
    for path in SCRIPTS:
        before = (window.doc.plan, window.doc.undo_stack.count())
        if not start.import_file(str(path)):
            status = start.import_status.text()
            refused.append(path.name)
            assert "Cannot import" in status and "<br>" not in status, f"{path.name}: {status}"
            assert (window.doc.plan, window.doc.undo_stack.count()) == before, f"{path.name}: a refusal changed the plan"
            continue
        review.refresh()
        text = review.run_sh.toPlainText()
        missing = [key for key in _marks(path) if key not in text]
        assert not missing, f"{path.name}: Review's run.sh lacks {missing}"
        assert window.doc.undo_stack.undoText() == f"Import {path.name}"  # one undo step
        shown += 1
    assert shown >= len(SCRIPTS) - 1, refused  # tests__special_e2e__run_test.sh takes its config name from $1


def test_a_refused_import_leaves_the_window_as_it_was(window, tmp_path):
    bad = tmp_path / "bad.sh"
    bad.write_text("#!/bin/bash\necho nothing to launch here\n")
    start = window.start_page
    before = (window.doc.plan, window.doc.undo_stack.count(), window.page("review").run_sh.toPlainText())
    assert not start.import_file(str(bad))
    status = start.import_status.text()
    assert "Cannot import" in status and len(status.splitlines()) == 1
    assert (window.doc.plan, window.doc.undo_stack.count(), window.page("review").run_sh.toPlainText()) == before


@pytest.mark.parametrize("text, said", [("hydra:\n  - just a list\n", "sets no verl key (only hydra)"),
                                        ("trainer: [unclosed\n", "&lt;unicode string&gt;")])
def test_a_yaml_with_nothing_of_verl_or_broken_leaves_the_plan_and_says_why_in_full(window, tmp_path, text, said):
    path = tmp_path / "config.yaml"
    path.write_text(text)
    before = (window.doc.plan, window.doc.undo_stack.count())
    assert not window.start_page.import_file(str(path))
    # (a file of Hydra's section only replaced the plan with verl's defaults; YAML's "<unicode string>" vanished as
    # a tag in the rich-text label)
    assert said in window.start_page.import_status.text()
    assert (window.doc.plan, window.doc.undo_stack.count()) == before


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_opening_a_fifo_or_dev_zero_is_refused_and_the_window_answers(window, tmp_path, kind):
    # issue 31: the window opening /dev/zero grew to 8 GB, frozen; a FIFO blocked it for good
    path = tmp_path / "config.yaml"
    if kind == "fifo":
        os.mkfifo(path)  # nobody ever writes into it: a read would wait forever
    else:
        path.symlink_to("/dev/zero")
    start = window.start_page
    before = (window.doc.plan, window.doc.undo_stack.count())
    assert not start.import_file(str(path))
    status = start.import_status.text()
    assert "Cannot import" in status and "not a regular file" in status and len(status.splitlines()) == 1
    assert (window.doc.plan, window.doc.undo_stack.count()) == before
