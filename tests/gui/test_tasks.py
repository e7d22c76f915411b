"""Work off the GUI thread hands everything it held back to the GUI thread: Qt deadlocks when a worker
thread destroys a widget (it happened in CI: a closed dialog's menu destroyed by its finished thread)."""

import gc
import threading

import pytest

pytest.importorskip("PySide6")

from wizard.gui.tasks import TaskRunner  # noqa: E402


class Witness:
    """Stands in for a widget a task's closure captured: records the thread it dies on."""

    died_on: list[str] = []

    def __del__(self):
        Witness.died_on.append(threading.current_thread().name)


def test_a_task_whose_dialog_closed_meanwhile_ends_on_the_gui_thread(qtbot):
    Witness.died_on.clear()
    runner = TaskRunner()
    release = threading.Event()

    def start(task_runner):
        witness = Witness()  # the dialog a scoring lambda captures, in real use
        task_runner.start("scoring", lambda: (witness, release.wait(10))[1])

    start(runner)
    del runner  # the dialog closed while its task ran: nothing on the GUI side holds the task any more
    gc.collect()
    release.set()
    qtbot.waitUntil(lambda: bool(Witness.died_on), timeout=10_000)
    assert Witness.died_on == [threading.main_thread().name]


def test_a_cancelled_task_still_ends_on_the_gui_thread(qtbot):
    Witness.died_on.clear()
    runner = TaskRunner()
    release = threading.Event()

    def start():
        witness = Witness()
        runner.start("slow probe", lambda: (witness, release.wait(10))[1])

    start()
    runner.cancel()
    release.set()
    qtbot.waitUntil(lambda: bool(Witness.died_on), timeout=10_000)
    assert Witness.died_on == [threading.main_thread().name]
