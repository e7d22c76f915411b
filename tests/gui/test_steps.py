"""The step registry (wizard.gui.steps): one entry per step module, texts that match the pages, and light enough
to import that the window shows Start before any other step's module (and the checker) is loaded."""

import pkgutil
import subprocess
import sys

import pytest

pytest.importorskip("PySide6")

from tests.conftest import ROOT  # noqa: E402
from wizard.gui import steps  # noqa: E402
from wizard.gui.widgets.page import Page  # noqa: E402


def test_every_step_module_has_one_entry_and_every_entry_a_module():
    modules = {m.name for m in pkgutil.iter_modules(steps.__path__) if not m.name.startswith("_")}
    keys = [s.key for s in steps.STEPS]
    assert len(keys) == len(set(keys)) and set(keys) == modules
    assert keys[0] == "start"  # the window builds it at once, before the plan document


@pytest.mark.parametrize("step", steps.STEPS, ids=lambda s: s.key)
def test_each_entry_names_its_page_and_the_page_says_the_entrys_texts(step):
    page = step.load()
    assert issubclass(page, Page) and page.__module__ == step.module
    assert (page.step, page.title, page.subtitle) == step.texts
    assert steps.index(step.key) == steps.STEPS.index(step)


def test_an_unknown_step_is_named_in_the_error():
    with pytest.raises(KeyError, match="no step 'revue'; steps: start, environment"):
        steps.index("revue")


def test_the_window_and_its_start_step_load_no_other_step_and_no_checker():
    code = ("import sys, wizard.gui.app, wizard.gui.steps.start; "
            "print(sorted(m for m in sys.modules if m.startswith(('wizard.gui.steps.', 'hydra', 'wizard.gui.document'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120,
                         check=True).stdout
    assert out.strip() == "['wizard.gui.steps._step', 'wizard.gui.steps.start']"
