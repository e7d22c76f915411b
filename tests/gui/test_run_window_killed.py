"""The window ended from outside while its run goes (SIGTERM, as `kill` or a logout sends; SIGKILL): the run it
started ends too, its setsid and cleared-environment children included. A real window in a process of its own
(offscreen), a real run of a stand-in Python, real signals."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.gui, pytest.mark.skipif(not os.path.isdir("/proc"), reason="runs read /proc (Linux)")]

WINDOW = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, sys.argv[1])
    os.environ["QT_QPA_PLATFORM"] = "offscreen"
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication
    app = QApplication([])
    from wizard.gui.gc_guard import collect_on_the_gui_thread
    collect_on_the_gui_thread(app)
    from wizard.gui.document import PlanDocument
    from wizard.gui.run.panel import RunPanel
    doc = PlanDocument(autosave=False)
    doc.load_preset("grpo-1gpu-smoke")
    panel = RunPanel(doc)
    panel.python.setText(sys.argv[2])
    panel.folder.setText(sys.argv[3])
    panel.show()
    assert panel.start()
    def up():
        if "tree up" in panel.log.plain_text():
            print("up", flush=True)
        else:
            QTimer.singleShot(100, up)
    up()
    app.exec()
""")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_the_run_ends_with_the_window_that_started_it(tmp_path, sig):
    marker = f"{800 + int(sig)}{os.getpid()}"
    py = tmp_path / "python"
    py.write_text("#!/bin/sh\ncase \"$*\" in *verl.trainer.main_ppo*) ;; *) exit 1;; esac\n"
                  f"sleep {marker} &\nsetsid sleep {marker} &\n( setsid sleep {marker} & )\n"
                  f"env -i setsid /bin/sleep {marker} &\necho 'tree up'\nexec sleep {marker}\n")
    py.chmod(0o755)
    window = subprocess.Popen([sys.executable, "-c", WINDOW, str(ROOT), str(py), str(tmp_path / "r")],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = window.stdout.readline()
    assert line.strip() == "up", window.stderr.read()
    window.send_signal(sig)
    window.wait(timeout=60)
    deadline = time.monotonic() + 60
    while True:
        pids = subprocess.run(["pgrep", "-f", f"sleep {marker}"], capture_output=True, text=True).stdout.split()
        if not pids or time.monotonic() > deadline:
            break
    assert pids == [], "processes of the run outlived the window"
