"""The GUI's one way to work off the GUI thread (wizard.gui.workers.Worker): answers come on the GUI thread, in
order; Cancel gives control back at once; and everything a work held is let go of on the GUI thread: Qt
deadlocks when a worker thread destroys a widget (it happened in CI: a closed dialog's menu destroyed by its
finished thread)."""

import functools
import gc
import threading

import pytest

pytest.importorskip("PySide6")

from PySide6.QtWidgets import QApplication, QLabel  # noqa: E402

from wizard.gui import workers  # noqa: E402
from wizard.gui.workers import Worker  # noqa: E402

GUI = threading.main_thread().name


class Witness:
    """Stands in for what a work's function held: records the thread it dies on."""

    died_on: list[str] = []

    def __del__(self):
        Witness.died_on.append(threading.current_thread().name)


def record(worker: Worker) -> list[tuple]:
    """Every signal the worker sends, with the thread it came on."""
    seen = []
    for name in ("started", "progress", "finished", "failed", "cancelled"):
        getattr(worker, name).connect(
            lambda *a, n=name: seen.append((n, *a, threading.current_thread().name)))
    return seen


def test_work_whose_dialog_closed_meanwhile_lets_go_on_the_gui_thread(qtbot):
    Witness.died_on.clear()
    runner = Worker()
    release = threading.Event()

    def start(worker):
        witness = Witness()  # what a work's function holds, in real use plain data
        worker.start("scoring", lambda: (witness, release.wait(10))[1])

    start(runner)
    del runner  # the dialog closed while its work ran: nothing on the GUI side holds the Worker any more
    gc.collect()
    release.set()
    qtbot.waitUntil(lambda: bool(Witness.died_on), timeout=10_000)
    assert Witness.died_on == [GUI]
    qtbot.waitUntil(lambda: not workers._mailbox()._held, timeout=10_000)  # and nothing is kept for ever


def test_a_cancelled_work_still_lets_go_on_the_gui_thread(qtbot):
    Witness.died_on.clear()
    runner = Worker()
    release = threading.Event()

    def start():
        witness = Witness()
        runner.start("slow probe", lambda: (witness, release.wait(10))[1])

    start()
    runner.cancel()
    release.set()
    qtbot.waitUntil(lambda: bool(Witness.died_on), timeout=10_000)
    assert Witness.died_on == [GUI]


def test_work_is_given_data_never_a_qt_object(qtbot):
    label = QLabel()
    qtbot.addWidget(label)
    runner = Worker()
    for fn, args in ((len, (label,)), (label.text, ()), (lambda: label.text(), ()),
                     (functools.partial(str, label), ()), (lambda x=label: x, ())):
        with pytest.raises(TypeError, match="never a Qt object.*QLabel"):
            runner.start("touching a widget", fn, *args)
    assert not runner.running


def test_progress_then_the_answer_come_on_the_gui_thread_in_order(qtbot):
    def count(job, n):
        for i in range(n):
            job.progress(i)
        return "counted"

    runner = Worker()
    seen = record(runner)
    with qtbot.waitSignal(runner.finished, timeout=10_000):
        runner.start_job("counting", count, 5)
    assert seen == [("started", "counting", GUI)] + [("progress", i, GUI) for i in range(5)] + [
        ("finished", "counted", GUI)]
    assert not runner.running and runner.wait(5) and runner.ended


def test_cancel_gives_control_back_at_once_and_drops_the_late_answer(qtbot):
    def slow(job):
        job.stop.wait(10)
        job.progress("late")
        return "late"

    runner = Worker()
    seen = record(runner)
    runner.start_job("slow", slow)
    runner.cancel()
    assert not runner.running and seen[-1] == ("cancelled", GUI)
    assert runner.wait(5)  # Cancel also asked the work to stop; its late answer is queued
    QApplication.processEvents()
    assert [s[0] for s in seen] == ["started", "cancelled"]


def test_stop_asks_the_work_to_end_and_still_takes_its_answer(qtbot):
    def until_stopped(job):
        while not job.stop.wait(0.01):
            job.progress("tick")
        return "stopped cleanly"

    runner = Worker()
    with qtbot.waitSignal(runner.progress, timeout=10_000):
        runner.start_job("ticking", until_stopped)
    with qtbot.waitSignal(runner.finished, timeout=10_000) as answer:
        runner.stop()
    assert answer.args == ["stopped cleanly"] and not runner.running


def test_a_newer_start_drops_the_older_answer(qtbot):
    release, older = threading.Event(), []

    def older_work():
        older.append(threading.current_thread())
        return release.wait(10)

    runner = Worker()
    seen = record(runner)
    runner.start("older", older_work)
    with qtbot.waitSignal(runner.finished, timeout=10_000):
        runner.start("newer", str, "newer answer")
    release.set()
    qtbot.waitUntil(lambda: bool(older), timeout=10_000)
    older[0].join(10)  # the older work ended: its answer is queued
    QApplication.processEvents()
    assert [s[:2] for s in seen if s[0] == "finished"] == [("finished", "newer answer")]


def test_failures_are_one_line_for_the_adapters_reasons_and_a_trace_otherwise(qtbot):
    def refuse(text):
        raise ValueError(text)

    runner = Worker()
    with qtbot.waitSignal(runner.failed, timeout=10_000) as failed:
        runner.start("reading", refuse, "no such file: x.parquet")
    assert failed.args == ["no such file: x.parquet"]
    with qtbot.waitSignal(runner.failed, timeout=10_000) as failed:
        runner.start("reading", {}.__getitem__, "key")
    assert failed.args[0].startswith("KeyError: 'key'\nTraceback")


def test_a_work_thread_never_calls_qt_so_it_cannot_deadlock_with_the_gui_thread(qtbot, qt_off_the_gui_thread):
    """A Qt signal emitted from a Python thread holds the GIL inside Qt's locks; CI once hung an hour on it."""
    def count(job, n):
        for i in range(n):
            job.progress(i)
        if n > 2:
            raise ValueError("refused")
        return "counted"

    runner = Worker()
    with qtbot.waitSignal(runner.finished, timeout=10_000):
        runner.start_job("counting", count, 2)
    with qtbot.waitSignal(runner.failed, timeout=10_000):
        runner.start_job("counting", count, 3)
    runner.wait(5)
    assert qt_off_the_gui_thread == []  # (every GUI test checks this as it ends, tests/gui/conftest.py)


def test_a_flood_of_progress_all_arrives_in_order(qtbot):
    """More reports than the wake-up socket's buffer holds bytes: none is lost, none waits for the next one."""
    def count(job, n):
        for i in range(n):
            job.progress(i)
        return n

    runner = Worker()
    seen = []
    runner.progress.connect(seen.append)
    with qtbot.waitSignal(runner.finished, timeout=30_000) as answer:
        runner.start_job("flooding", count, 300_000)
    assert answer.args == [300_000] and seen == list(range(300_000))


@pytest.mark.parametrize("call", ["a method of a project subclass", "a static function", "a signal emit"])
def test_the_guard_sees_each_kind_of_qt_call_off_the_gui_thread(qtbot, qt_off_the_gui_thread, call):
    """The check every GUI test ends with (tests/gui/conftest.py) catches what a work thread could touch."""
    from PySide6.QtCore import QCoreApplication, QObject

    class Owned(QObject):
        pass

    owned = Owned()

    def touch():
        if call.startswith("a method"):
            owned.blockSignals(False)
        elif call.startswith("a static"):
            QCoreApplication.instance()
        else:
            owned.destroyed.emit()

    thread = threading.Thread(target=touch, name="toucher")
    thread.start()
    thread.join()
    seen = list(qt_off_the_gui_thread)
    qt_off_the_gui_thread.clear()  # caught here: the test itself must not fail for it
    assert seen and all(s.startswith("toucher: ") for s in seen)
