"""The Run page's Time tab: a stacked bar per step of where its time went, the warm-up marked, the steady
figures (tokens/s, GPU busy), the advice, and the forecast of the configured full run.

The figures come computed from the core (``wizard.core.run.timing``); this widget draws them. It redraws on
a timer when a live run's metrics change, never once per line.
"""

from __future__ import annotations

import html

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QLabel, QScrollArea, QSplitter, QStackedWidget, QVBoxLayout, QWidget

from wizard.core.findings import Finding
from wizard.core.run import Forecast, TimingSummary, fmt_rate, fmt_s
from wizard.gui.run.metric_plots import StepAxis
from wizard.gui.wording import window_finding

PHASE_COLOURS = {"generation": "#1f77b4", "reward": "#17becf", "log-probs": "#9467bd", "reference": "#8c564b",
                 "critic": "#e377c2", "update": "#d62728", "weight sync": "#ff7f0e", "other": "#9e9e9e"}
EMPTY_TEXT = ("No step has finished yet. verl times every phase of a step (generation, log-probs, reference, update, "
              "weight sync); the bars show here after the first step, which also carries the warm-up.")


class TimingView(QWidget):
    """``show_timing(summary, forecast)`` draws a run's timing; ``bars()`` says what is drawn (for tests)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.summary: TimingSummary | None = None
        self.forecast: Forecast | str | None = None
        self._bars: dict[str, pg.BarGraphItem] = {}
        self.plot = pg.PlotWidget(axisItems={"bottom": StepAxis("bottom")})
        self.plot.setObjectName("timingPlot")
        self.plot.setBackground(self.palette().color(QPalette.Base))
        ink = self.palette().color(QPalette.Text)
        for axis in ("left", "bottom"):
            self.plot.getAxis(axis).setTextPen(ink)
        self.plot.setLabel("left", "seconds")
        self.plot.setLabel("bottom", "step")
        self.plot.showGrid(y=True, alpha=0.25)
        self.plot.setMouseEnabled(x=False, y=False)
        self.legend = self.plot.addLegend(offset=(-10, 10), labelTextColor=ink)
        self.text = QLabel()
        self.text.setObjectName("timingText")
        self.text.setWordWrap(True)
        self.text.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.text.setAlignment(Qt.AlignTop | Qt.AlignLeft)
        scroller = QScrollArea()
        scroller.setWidgetResizable(True)
        scroller.setWidget(self.text)
        split = QSplitter(Qt.Horizontal)
        split.addWidget(self.plot)
        split.addWidget(scroller)
        split.setSizes([560, 440])
        self.empty = QLabel(EMPTY_TEXT)
        self.empty.setObjectName("timingEmpty")
        self.empty.setWordWrap(True)
        self.empty.setAlignment(Qt.AlignCenter)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.empty)
        self.stack.addWidget(split)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.stack)

    def clear(self) -> None:
        self.summary = self.forecast = None
        self.plot.clear()
        self.legend.clear()
        self._bars.clear()
        self.text.clear()
        self.stack.setCurrentWidget(self.empty)

    def show_timing(self, summary: TimingSummary, forecast: Forecast | str | None) -> None:
        if not summary.steps:
            self.clear()
            return
        self.summary, self.forecast = summary, forecast
        self._draw(summary)
        self.text.setText(self._html(summary, forecast))
        self.stack.setCurrentIndex(1)

    def _draw(self, summary: TimingSummary) -> None:
        self.plot.clear()
        self.legend.clear()
        self._bars.clear()
        steps = [s.step for s in summary.steps]
        bottom = [0.0] * len(steps)
        for phase in summary.shown_phases():
            heights = [s.phases.get(phase, 0.0) for s in summary.steps]
            colour = PHASE_COLOURS[phase]
            bar = pg.BarGraphItem(x=steps, height=heights, y0=list(bottom), width=0.6, brush=colour,
                                  pen=pg.mkPen(colour))
            self.plot.addItem(bar)
            self.legend.addItem(bar, phase)
            self._bars[phase] = bar
            bottom = [b + h for b, h in zip(bottom, heights)]
        warm = summary.warmup
        if warm is not None:
            label = pg.TextItem("warm-up", color=self.palette().color(QPalette.Text), anchor=(0.5, 1.0))
            label.setPos(warm.step, warm.total)
            self.plot.addItem(label)
        top = max(s.total for s in summary.steps)
        every = max(1, len(steps) // 20)  # at most about 20 step labels
        self.plot.getAxis("bottom").setTicks([[(s, str(s)) for s in steps[::every]]])
        self.plot.setXRange(min(steps) - 0.6, max(steps) + 0.6 + 0.25 * len(steps), padding=0)
        self.plot.setYRange(0, top * 1.12, padding=0)

    def bars(self) -> dict[str, list[float]]:
        """phase -> seconds per step, as drawn."""
        return {p: [float(h) for h in bar.opts["height"]] for p, bar in self._bars.items()}

    @staticmethod
    def _html(s: TimingSummary, fc: Forecast | str | None) -> str:
        shares = ", ".join(f"{p} <b>{100 * s.share(p):.0f} %</b>" for p in s.shown_phases() if s.share(p) >= 0.005)
        steady = ", ".join(map(str, s.steady))
        out = [f"<b>A steady step takes {fmt_s(s.step_s)}</b> (median of step{'s' if len(s.steady) > 1 else ''} "
               f"{steady}): {shares}."]
        rates = [f"generation {fmt_rate(s.gen_tokens_s)}" if s.gen_tokens_s else "",
                 f"update {fmt_rate(s.update_tokens_s)}" if s.update_tokens_s else ""]
        if any(rates):
            per = f" on {s.n_gpus} GPU{'s' if s.n_gpus != 1 else ''}" if s.n_gpus else ""
            out.append(f"Throughput{per}: " + ", ".join(r for r in rates if r) + ".")
        out.append(f"GPUs busy {s.gpu_busy:.0f} % of the steady steps." if s.gpu_busy is not None else
                   "GPU busy: not sampled for this run (the GPU monitor records it for runs started here).")
        out += [_finding(f) for f in s.advice]
        if isinstance(fc, Forecast):
            out.append(f"<b>Forecast.</b> {html.escape(fc.line())}<br><small>Assuming "
                       + "; ".join(html.escape(a) for a in fc.assumptions) + ".</small>")
        elif fc:
            out.append(f"<b>Forecast:</b> none yet ({html.escape(fc)}).")
        return "<p>" + "</p><p>".join(out) + "</p>"


def _finding(f: Finding) -> str:
    f = window_finding(f)
    fix = f"<br><i>{html.escape(f.fix)}</i>" if f.fix else ""
    return f"&#9656; {html.escape(f.message)}{fix}"


__all__ = ["TimingView", "PHASE_COLOURS"]
