"""Live plots of a run's metric series (pyqtgraph), one small plot per family, and a picker of the series.

Metrics arrive as ``StepMetrics`` (parsed by ``wizard.core.run.logparse`` on the run's worker thread); they are
kept in a core ``RunLog`` (a step logged twice is kept once) and drawn on one timer: each tick calls
``setData`` only for the series that changed, never once per line of output.

The families follow verl 0.9.1's metric names (shared/reference/verl-0.9.1.md §5.2): reward/score, validation,
KL, losses, entropy, response length, grad norm, throughput, timing per phase. The series a newcomer watches
are ticked at first; every other series verl prints can be ticked in the picker.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Iterable

import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import (
    QFrame,
    QLabel,
    QScrollArea,
    QSplitter,
    QStackedWidget,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from wizard.core.run import RunLog, StepMetrics

TICK_MS = 250
COLUMNS = 2
TITLE_CHARS = 44
PLOT_HEIGHT = 210  # pixels per row of plots: below this the axes crowd the data; the plots scroll instead
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f")


def _starts(*prefixes: str) -> Callable[[str], bool]:
    return lambda key: key.startswith(prefixes)


def _is(*names: str) -> Callable[[str], bool]:
    return lambda key: key in names


# (title, member test, the members ticked at first); the first family that claims a key gets it
FAMILIES: tuple[tuple[str, Callable[[str], bool], tuple[str, ...]], ...] = (
    ("Reward / score", _starts("critic/score/", "critic/rewards/"), ("critic/score/mean",)),
    ("Validation", _starts("val-core/"), ("*mean@",)),
    ("KL", _is("actor/kl_loss", "actor/ppo_kl", "actor/reward_kl_penalty", "actor/kl_coef",
               "actor/reward_kl_penalty_coeff"), ("actor/kl_loss", "actor/ppo_kl", "actor/reward_kl_penalty")),
    ("Losses", _is("actor/pg_loss", "actor/loss", "critic/vf_loss", "critic/loss", "actor/entropy_loss"),
     ("actor/pg_loss", "critic/vf_loss")),
    ("Entropy", _is("actor/entropy"), ("actor/entropy",)),
    ("Response length (tokens)", _starts("response_length/"), ("response_length/mean", "response_length/max")),
    ("Grad norm", lambda key: key.endswith("/grad_norm"), ("actor/grad_norm", "critic/grad_norm")),
    ("Throughput", _is("perf/throughput", "perf/time_per_step", "perf/total_num_tokens", "perf/mfu/actor"),
     ("perf/throughput",)),
    ("Timing per phase (s)", _starts("timing_s/"), ("timing_s/gen", "timing_s/old_log_prob", "timing_s/ref",
                                                     "timing_s/update_actor", "timing_s/update_critic",
                                                     "timing_s/reward", "timing_s/testing")),
    ("Other", lambda key: True, ()),
)
FAMILY_TITLES = tuple(title for title, _, _ in FAMILIES)


class StepAxis(pg.AxisItem):
    """Training steps are whole numbers: no tick at step 1.5."""

    def tickValues(self, minVal, maxVal, size):  # noqa: N802, N803 - pyqtgraph's names
        levels = super().tickValues(minVal, maxVal, size)
        out = []
        for spacing, values in levels:
            if spacing < 1:
                continue
            out.append((spacing, [v for v in values if float(v).is_integer()]))
        if not out:  # zoomed in below one step: the whole steps in view
            out = [(1.0, [float(v) for v in range(math.ceil(minVal), math.floor(maxVal) + 1)])]
        return out

    def tickStrings(self, values, scale, spacing):  # noqa: N802
        return [str(int(v)) for v in values]


def family_of(key: str) -> str:
    return next(title for title, member, _ in FAMILIES if member(key))


def ticked_at_first(key: str) -> bool:
    for title, member, defaults in FAMILIES:
        if member(key):
            return key in defaults or any(d.startswith("*") and d[1:] in key for d in defaults)
    return False


class MetricPlots(QWidget):
    """The series picker (left) and the plots (right); ``add`` queues metrics, the timer draws them."""

    def __init__(self, parent: QWidget | None = None, tick_ms: int = TICK_MS) -> None:
        super().__init__(parent)
        self.log = RunLog()
        self._dirty: set[str] = set()
        self._curves: dict[str, pg.PlotDataItem] = {}
        self._nan_marks: dict[str, list[pg.InfiniteLine]] = {}
        self._colours: dict[str, str] = {}
        self._plots: dict[str, pg.PlotItem] = {}
        self._items: dict[str, QTreeWidgetItem] = {}
        self._family_items: dict[str, QTreeWidgetItem] = {}
        self._layout_key: tuple[str, ...] = ()

        self.picker = QTreeWidget()
        self.picker.setObjectName("metricPicker")
        self.picker.setAccessibleName("Metric series")
        self.picker.setHeaderLabels(["Series"])
        self.picker.setToolTip("Tick the series to plot; each family gets its own plot")
        self.picker.itemChanged.connect(self._item_changed)
        self.canvas = pg.GraphicsLayoutWidget()
        self.canvas.setObjectName("metricCanvas")
        base = self.palette().color(QPalette.Base)
        self.canvas.setBackground(base)
        self._text_colour = self.palette().color(QPalette.Text)
        self.empty = QLabel("No metrics yet. verl prints one line per training step (step:N - ...); the first comes "
                            "after the models load and the first rollout finishes, which takes minutes on a GPU.")
        self.empty.setObjectName("metricsEmpty")
        self.empty.setWordWrap(True)
        self.empty.setAlignment(Qt.AlignCenter)
        self.scroller = QScrollArea()
        self.scroller.setWidgetResizable(True)
        self.scroller.setFrameShape(QFrame.NoFrame)
        self.scroller.setWidget(self.canvas)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.empty)
        self.stack.addWidget(self.scroller)
        split = QSplitter(Qt.Horizontal)
        split.addWidget(self.picker)
        split.addWidget(self.stack)
        split.setStretchFactor(1, 1)
        split.setSizes([240, 760])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(split)
        self._timer = QTimer(self)
        self._timer.setInterval(tick_ms)
        self._timer.timeout.connect(self.redraw)

    # -- data -------------------------------------------------------------------------------------------------

    def add(self, metrics: Iterable[StepMetrics]) -> None:
        """Queue metrics; they are drawn at the next tick."""
        for m in metrics:
            self.log.add_metrics(m)
            self._dirty.update(m.data)
        if self._dirty and not self._timer.isActive():
            self._timer.start()

    def clear(self) -> None:
        self.log = RunLog()
        self._dirty.clear()
        self.picker.blockSignals(True)
        self.picker.clear()
        self.picker.blockSignals(False)
        self._items.clear()
        self._family_items.clear()
        self._curves.clear()
        self._nan_marks.clear()
        self._plots.clear()
        self.canvas.clear()
        self._layout_key = ()
        self.stack.setCurrentWidget(self.empty)

    def series_names(self) -> list[str]:
        return sorted(self.log.series)

    def plotted(self) -> list[str]:
        """The series drawn now (ticked and with data)."""
        self.redraw()
        return sorted(self._curves)

    def curve_data(self, name: str) -> tuple[list[float], list[float]]:
        """What the plot of ``name`` shows: (steps, values)."""
        self.redraw()
        curve = self._curves.get(name)
        if curve is None:
            return [], []
        xs, ys = curve.getData()
        return ([] if xs is None else [float(x) for x in xs]), ([] if ys is None else [float(y) for y in ys])

    def set_checked(self, name: str, on: bool) -> None:
        self.redraw()
        item = self._items.get(name)
        if item is not None:
            item.setCheckState(0, Qt.Checked if on else Qt.Unchecked)

    # -- drawing ----------------------------------------------------------------------------------------------

    def redraw(self) -> None:
        """One tick: new series join the picker, changed series get ``setData``."""
        if not self._dirty:
            self._timer.stop()
            return
        dirty, self._dirty = self._dirty, set()
        self.picker.blockSignals(True)
        try:
            for name in sorted(dirty):
                if name not in self._items:
                    self._add_item(name)
        finally:
            self.picker.blockSignals(False)
        self._relayout()
        for name in dirty:
            curve = self._curves.get(name)
            if curve is not None:
                self._set_data(curve, name)
        if self.log.series:
            self.stack.setCurrentWidget(self.scroller)

    def _set_data(self, curve: pg.PlotDataItem, name: str) -> None:
        """The curve, with a dashed red line at each step where the value is NaN/inf (a gap alone is easy to miss)."""
        points = self.log.series.get(name, [])
        xs = [s for s, _ in points]
        ys = [v if not math.isinf(v) else math.nan for _, v in points]
        curve.setData(xs, ys, connect="finite")
        bad = [s for s, v in zip(xs, ys) if math.isnan(v)]
        marks = self._nan_marks.setdefault(name, [])
        plot = self._plots.get(family_of(name))
        while len(marks) > len(bad):
            mark = marks.pop()
            if plot is not None:
                plot.removeItem(mark)
        for step, mark in zip(bad, marks):
            mark.setValue(step)
        for step in bad[len(marks):]:
            if plot is None:
                break
            mark = pg.InfiniteLine(pos=step, angle=90, pen=pg.mkPen("#c62828", width=1, style=Qt.DashLine),
                                   label=f"{name.rsplit('/', 1)[-1]} NaN", labelOpts={"color": "#c62828",
                                                                                       "position": 0.9})
            plot.addItem(mark)
            marks.append(mark)

    def _titles(self) -> None:
        """Each plot's title names its series in their curve colours (a legend inside a small plot hides data);
        names are short (the family says the rest) so a title never widens its column past the window."""
        ink = self._text_colour.name()
        for family, plot in self._plots.items():
            names = [n for n in self._curves if family_of(n) == family]
            shown, used = [], len(family)
            for n in names:
                short = n.split("/", 1)[1] if "/" in n else n
                if shown and used + len(short) > TITLE_CHARS:
                    shown.append(f"+{len(names) - len(shown)} more")
                    break
                shown.append(f"<span style='color:{self._colours[n]}'>{html.escape(short)}</span>")
                used += len(short) + 2
            plot.setTitle(f"<span style='color:{ink}'>{html.escape(family)}:</span> {', '.join(shown)}", size="10pt")

    def _add_item(self, name: str) -> None:
        family = family_of(name)
        parent = self._family_items.get(family)
        if parent is None:
            parent = QTreeWidgetItem([family])
            parent.setFlags(parent.flags() | Qt.ItemIsAutoTristate | Qt.ItemIsUserCheckable)
            order = FAMILY_TITLES.index(family)
            at = sum(1 for f in self._family_items if FAMILY_TITLES.index(f) < order)
            self.picker.insertTopLevelItem(at, parent)
            parent.setExpanded(family != "Other")
            self._family_items[family] = parent
        item = QTreeWidgetItem([name])
        item.setFlags(item.flags() | Qt.ItemIsUserCheckable)
        item.setCheckState(0, Qt.Checked if ticked_at_first(name) else Qt.Unchecked)
        item.setData(0, Qt.UserRole, name)
        parent.addChild(item)
        parent.sortChildren(0, Qt.AscendingOrder)
        self._items[name] = item

    def _checked(self) -> list[str]:
        return [n for n, item in self._items.items() if item.checkState(0) == Qt.Checked]

    def _item_changed(self, item: QTreeWidgetItem, _column: int) -> None:
        name = item.data(0, Qt.UserRole)
        if name is None:  # a family: Qt ticks its children, each of which reports here
            return
        self._relayout()
        if name in self._curves:
            self._set_data(self._curves[name], name)

    def _relayout(self) -> None:
        """One plot per family with a ticked series; built again only when that set changes."""
        checked = self._checked()
        families = tuple(f for f in FAMILY_TITLES if any(family_of(n) == f for n in checked))
        wanted = set(checked)
        if families != self._layout_key:
            self.canvas.clear()
            self._plots.clear()
            self._curves.clear()
            self._nan_marks.clear()
            for i, family in enumerate(families):
                plot = self.canvas.addPlot(row=i // COLUMNS, col=i % COLUMNS, title=family,
                                           axisItems={"bottom": StepAxis("bottom")})
                plot.showGrid(x=True, y=True, alpha=0.25)
                plot.setLabel("bottom", "step")
                plot.getAxis("left").setTextPen(self._text_colour)
                plot.getAxis("bottom").setTextPen(self._text_colour)
                self._plots[family] = plot
            self._layout_key = families
            for col in range(COLUMNS):
                self.canvas.ci.layout.setColumnStretchFactor(col, 1)
            rows = (len(families) + COLUMNS - 1) // COLUMNS
            self.canvas.setMinimumHeight(rows * PLOT_HEIGHT)
        for name in list(self._curves):
            if name not in wanted:
                curve = self._curves.pop(name)
                plot = self._plots[family_of(name)]
                plot.removeItem(curve)
                for mark in self._nan_marks.pop(name, []):
                    plot.removeItem(mark)
        for name in checked:
            if name not in self._curves:
                plot = self._plots[family_of(name)]
                colour = PALETTE[len(plot.listDataItems()) % len(PALETTE)]
                self._colours[name] = colour
                curve = plot.plot( pen=pg.mkPen(colour, width=2), symbol="o", symbolSize=5,
                                  symbolBrush=colour, symbolPen=None)
                self._curves[name] = curve
                self._set_data(curve, name)
        self._titles()


__all__ = ["MetricPlots", "FAMILIES", "family_of", "ticked_at_first"]
