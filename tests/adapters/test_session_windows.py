"""Two GUI windows (two processes) at once each keep their own autosave: one's clean close or later edit never
removes or overwrites the other's unsaved work, a live window's autosave is never offered to another, and the one a
killed window left is offered to the next window, once. Real processes, a real SIGKILL."""

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

WINDOW = textwrap.dedent("""
    import json, sys
    sys.path.insert(0, sys.argv[1])
    from wizard.adapters.files import session_store as s
    print(json.dumps({"offered": s.load_session()}), flush=True)
    for line in sys.stdin:  # one command a line: save NAME | close | hold
        cmd, _, arg = line.strip().partition(" ")
        if cmd == "save":
            s.save_session({"plan": {"name": arg}, "gpus": None})
        elif cmd == "close":
            s.clear_session()
            break
        print("ok", flush=True)
""")


class Window:
    def __init__(self, state: Path):
        env = dict(os.environ, XDG_STATE_HOME=str(state))
        self.proc = subprocess.Popen([sys.executable, "-c", WINDOW, str(ROOT)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env)
        self.offered = json.loads(self.proc.stdout.readline())["offered"]

    def do(self, line: str) -> None:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        if line != "close":
            assert self.proc.stdout.readline().strip() == "ok"
        else:
            self.proc.wait(timeout=60)


def test_two_windows_keep_their_own_autosaves(tmp_path):
    a = Window(tmp_path)
    a.do("save A-unsaved")
    b = Window(tmp_path)
    assert b.offered is None  # A is open: its work is not B's to offer
    b.do("save B-work")
    b.do("close")  # B's clean close removes B's autosave only
    a.proc.send_signal(signal.SIGKILL)  # A dies with unsaved work
    a.proc.wait(timeout=60)
    c = Window(tmp_path)
    assert c.offered == {"plan": {"name": "A-unsaved"}, "gpus": None}
    d = Window(tmp_path)
    assert d.offered is None  # C took it over: offered once
    c.do("close")
    d.do("close")
    assert list((tmp_path / "verl-wizard" / "sessions").iterdir()) == []
