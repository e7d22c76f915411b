"""The Run page's GPU monitor: memory used/total, peak memory and utilisation per GPU, sampled once a second.

Sampling runs on a thread of its own (:func:`sample_gpus`, run by a ``wizard.gui.workers.Worker``): NVML calls
are cheap once NVML is open, but a driver that hangs must never freeze typing. The thread parses each sample
(``wizard.adapters.machine.gpu_sampler.parse_sample``) and sends the GUI a ``GpuSnapshot``; ``show_snapshot`` is
the only way the display changes, so tests feed it recorded captures from real GPUs.
"""

from __future__ import annotations

import time

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QLabel, QProgressBar, QVBoxLayout, QWidget

from wizard.adapters.machine.gpu_sampler import GpuReading, GpuSampler, GpuSnapshot, format_gib, parse_sample
from wizard.gui.workers import Job, Worker

INTERVAL_MS = 1000


def sample_gpus(job: Job, interval_s: float) -> None:
    """On the sampler's thread, until stopped: a sample now, then one every ``interval_s``, each reported as
    ``(GpuSnapshot, seconds it took)``. NVML is opened and closed on this thread. Without NVML the answer
    cannot change: it is asked once."""
    sampler = GpuSampler()
    due = time.monotonic()
    try:
        while True:
            t = time.perf_counter()
            snapshot = parse_sample(sampler.sample())
            job.progress((snapshot, time.perf_counter() - t))
            due += interval_s
            if not sampler.available or job.stop.wait(max(0.0, due - time.monotonic())):
                return
    finally:
        sampler.close()


class _GpuRow(QFrame):
    """One GPU: its name, memory (used, total, the peak seen) with a bar, utilisation with a bar, its processes."""

    def __init__(self, index: int) -> None:
        super().__init__()
        self.setFrameShape(QFrame.StyledPanel)
        self.title = QLabel()
        self.memory_text = QLabel()
        self.memory = QProgressBar()
        self.memory.setRange(0, 100)
        self.util_text = QLabel()
        self.util = QProgressBar()
        self.util.setRange(0, 100)
        self.procs = QLabel()
        self.procs.setWordWrap(True)
        self.peak = 0
        layout = QVBoxLayout(self)
        for w in (self.title, self.memory_text, self.memory, self.util_text, self.util, self.procs):
            layout.addWidget(w)
        self.setObjectName(f"gpu{index}")

    def show_reading(self, g: GpuReading) -> None:
        self.title.setText(f"<b>GPU {g.index}</b> · {g.name}")
        if g.memory_used is not None:
            self.peak = max(self.peak, g.memory_used)
        fraction = g.memory_fraction
        self.memory.setEnabled(fraction is not None)
        self.memory.setValue(round(100 * fraction) if fraction is not None else 0)
        self.memory.setFormat("%p%" if fraction is not None else "")
        self.memory_text.setText("Memory: not reported" if fraction is None else
                                 f"Memory: {format_gib(g.memory_used)} of {format_gib(g.memory_total)} GiB "
                                 f"(peak {format_gib(self.peak)})")
        self.util.setEnabled(g.util_gpu is not None)
        self.util.setValue(g.util_gpu or 0)
        self.util.setFormat("%p%" if g.util_gpu is not None else "")
        self.util_text.setText("Utilisation: not reported" if g.util_gpu is None else f"Utilisation: {g.util_gpu}%")
        if g.processes is None:
            self.procs.setText("")
        elif g.processes:
            self.procs.setText(f"Compute processes (pid): {', '.join(map(str, g.processes[:8]))}"
                               + (f" and {len(g.processes) - 8} more" if len(g.processes) > 8 else ""))
        else:
            self.procs.setText("No compute process")

    def text(self) -> str:
        return " | ".join((self.title.text(), self.memory_text.text(), self.util_text.text(), self.procs.text()))


class GpuMonitor(QWidget):
    """Per-GPU bars, or one line saying why there are none (no driver, no permission, no GPU)."""

    snapshot_changed = Signal(object)  # GpuSnapshot

    def __init__(self, parent: QWidget | None = None, interval_ms: int = INTERVAL_MS) -> None:
        super().__init__(parent)
        self.interval_ms = interval_ms
        self.snapshot: GpuSnapshot | None = None
        self.last_sample_s: float | None = None
        self._rows: list[_GpuRow] = []
        self._sampler = Worker(self)
        self._sampler.progress.connect(self._sampled)
        self._sampling = False
        self.heading = QLabel("<b>GPUs</b>")
        self.state = QLabel("Looking for GPUs…")
        self.state.setObjectName("gpuState")
        self.state.setWordWrap(True)
        self.state.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.hint = QLabel("Without a visible GPU, a verl run stops during startup (\"Total available GPUs 0 is "
                           "less than total desired GPUs …\"); Start still shows the startup and that verdict.")
        self.hint.setObjectName("gpuHint")
        self.hint.setWordWrap(True)
        self.hint.setStyleSheet("color: palette(placeholder-text);")
        self.hint.setVisible(False)
        self._box = QVBoxLayout()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.heading)
        layout.addWidget(self.state)
        layout.addWidget(self.hint)
        layout.addLayout(self._box)
        layout.addStretch(1)

    # -- sampling ---------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Sample on a thread of its own until ``stop``."""
        if self._sampling:
            return
        self._sampling = True
        self._sampler.start_job("sample the GPUs", sample_gpus, self.interval_ms / 1000)

    def stop(self) -> None:
        """No more samples; NVML is closed when this returns (unless the driver hangs past 5 s)."""
        if not self._sampling:
            return
        self._sampling = False
        self._sampler.cancel()
        self._sampler.wait(5.0)

    @property
    def sampling(self) -> bool:
        return self._sampling

    def _sampled(self, sample: tuple[GpuSnapshot, float]) -> None:
        snapshot, self.last_sample_s = sample
        self.show_snapshot(snapshot)

    # -- display ----------------------------------------------------------------------------------------------

    def show_snapshot(self, snapshot: GpuSnapshot) -> None:
        self.snapshot = snapshot
        if snapshot.explanation:
            self.state.setText(snapshot.explanation[0].upper() + snapshot.explanation[1:] + ".")
            self.hint.setVisible(True)
        else:
            self.hint.setVisible(False)
            n = len(snapshot.gpus)
            self.state.setText(f"{n} GPU{'s' if n != 1 else ''} on this machine, sampled every "
                               f"{self.interval_ms / 1000:g} s.")
        while len(self._rows) > len(snapshot.gpus):
            row = self._rows.pop()
            self._box.removeWidget(row)
            row.deleteLater()
        while len(self._rows) < len(snapshot.gpus):
            row = _GpuRow(len(self._rows))
            self._rows.append(row)
            self._box.addWidget(row)
        for row, reading in zip(self._rows, snapshot.gpus):
            row.show_reading(reading)
        self.snapshot_changed.emit(snapshot)

    def busy(self) -> bool | None:
        return self.snapshot.busy() if self.snapshot else None

    def row_texts(self) -> list[str]:
        """What each GPU row says (title, memory, utilisation, processes), for people and tests."""
        return [r.text() for r in self._rows]

    def closeEvent(self, event) -> None:  # noqa: N802
        self.stop()
        super().closeEvent(event)


__all__ = ["GpuMonitor", "INTERVAL_MS"]
