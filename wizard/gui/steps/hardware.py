"""The Hardware step: this machine's GPUs and links (NVML), a cluster spec, or a running Ray cluster, read off
the GUI thread; the plan's shape follows what the user chooses."""

from __future__ import annotations

import os

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QFileDialog,
    QGroupBox,
    QHBoxLayout,
    QLineEdit,
    QPushButton,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from wizard.core.hardware import LinkKind
from wizard.gui.document import PlanDocument
from wizard.gui.steps import texts
from wizard.gui.steps._machine import escaped, findings_html, read_only_table
from wizard.gui.widgets.fields import FieldForm
from wizard.gui.widgets.page import Page, note, scrolled
from wizard.gui.widgets.task_bar import TaskBar
from wizard.gui.widgets.topology_view import TopologyView
from wizard.gui.workers import Worker

# Link colours, best to worst, for the topology matrix (readable on light and dark palettes).
LINK_COLOURS = {
    LinkKind.NV: "#2e7d32", LinkKind.PIX: "#558b2f", LinkKind.PXB: "#9e9d24",
    LinkKind.PHB: "#ef6c00", LinkKind.NODE: "#d84315", LinkKind.SYS: "#c62828",
}
LINK_WORDS = {
    LinkKind.NV: "NVLink", LinkKind.PIX: "one PCIe switch", LinkKind.PXB: "several PCIe switches",
    LinkKind.PHB: "through the CPU's PCIe host bridge", LinkKind.NODE: "between host bridges of one NUMA node",
    LinkKind.SYS: "across CPU sockets (slowest)",
}


class HardwarePage(Page):
    step, title, subtitle = texts("hardware")

    def __init__(self, doc: PlanDocument) -> None:
        super().__init__(doc)
        self.discovery = None
        self.runner = Worker(self)
        self.runner.finished.connect(self.show_discovery)
        self.runner.failed.connect(
            lambda m: self.summary.setText(f"<span style='color:#c62828'>{escaped(m)}</span>"))
        detect = QPushButton("&Detect this machine")
        detect.setObjectName("detectGpus")
        detect.clicked.connect(self.detect)
        spec = QPushButton("Open a cluster &spec…")
        spec.clicked.connect(self._spec_dialog)
        self.ray_address = QLineEdit()
        self.ray_address.setPlaceholderText("Ray address, e.g. 10.0.0.1:6379 or auto")
        self.ray_address.setAccessibleName("Ray address")
        ray = QPushButton("Ask &Ray")
        ray.clicked.connect(self.ask_ray)
        self.use_button = QPushButton("&Use these GPUs for the plan")
        self.use_button.setObjectName("useGpus")
        self.use_button.setEnabled(False)
        self.use_button.clicked.connect(self.use_discovery)
        self.summary = note("", "hardwareSummary")
        doc.changed.connect(self._idle_summary)
        self._idle_summary()
        self.gpus = read_only_table("gpuTable", ["GPU", "Model", "Memory", "Free", "NUMA", "CPUs", "Busy"])
        self.matrix = read_only_table("linkMatrix", [])
        self.legend = note(" · ".join(f"<span style='color:{LINK_COLOURS[k]}'>■</span> {k.value}: {LINK_WORDS[k]}"
                                      for k in LinkKind), "linkLegend")
        self.findings = note("", "hardwareFindings")
        form = FieldForm(doc, [("hardware.nnodes", "Nodes"), ("hardware.n_gpus_per_node", "GPUs per node"),
                               ("hardware.ray_num_cpus", "Ray CPUs")])
        self.forms.append(form)

        body = QWidget()
        layout = QVBoxLayout(body)
        row = QHBoxLayout()
        for w in (detect, spec):
            row.addWidget(w)
        row.addWidget(self.ray_address, 1)
        row.addWidget(ray)
        layout.addLayout(row)
        layout.addWidget(TaskBar(self.runner))
        layout.addWidget(self.summary)
        layout.addWidget(self.findings)
        layout.addWidget(self.gpus)
        self.topology = TopologyView()
        self.topology.setMinimumHeight(220)
        layout.addWidget(self.topology)
        self.links_box = box = QGroupBox("How the GPUs are linked (as nvidia-smi topo -m)")
        QVBoxLayout(box).addWidget(self.matrix)
        box.layout().addWidget(self.legend)
        layout.addWidget(box)
        self.gpus.hide()  # shown once something was detected: no empty tables
        box.hide()
        layout.addWidget(self.use_button, 0, Qt.AlignLeft)
        plan_box = QGroupBox("The plan's shape (verl's trainer keys)")
        QVBoxLayout(plan_box).addWidget(form)
        layout.addWidget(plan_box)
        layout.addStretch(1)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        self.scroll = scrolled(body)
        outer.addWidget(self.scroll)

    def _idle_summary(self) -> None:
        """Before anything is detected: what the plan is checked against (the GPUs typed on the Start step, or the
        plan's own shape); a newcomer who typed 1xRTX4090-24GB read "Nothing detected yet" and nothing of it."""
        if self.discovery is not None or self.doc.cluster is not None:
            return
        typed = self.doc.gpus
        self.summary.setText(
            f"Nothing detected yet. The plan is checked against the GPUs typed on the Start step: "
            f"<b>{escaped(str(typed))}</b>." if typed is not None and typed.model else
            "Nothing detected yet. Without it, the plan's own trainer.nnodes × n_gpus_per_node is what gets checked.")

    def detect(self) -> None:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        self.runner.start("Asking NVML about this machine's GPUs", _detect, visible)

    def _spec_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Cluster spec or a saved 'verl-wizard detect --format json'",
                                              os.getcwd(), "Cluster spec or detect answer (*.yaml *.yml *.json)")
        if path:
            self.load_spec(path)

    def load_spec(self, path: str) -> None:
        self.runner.start(f"Reading {path}", _read_spec, path)

    def ask_ray(self) -> None:
        from wizard.adapters.verl_env.ray_cluster import discover_ray

        address = self.ray_address.text().strip()
        if not address:
            self.summary.setText("Type the Ray address first (the head node's IP:6379, or auto).")
            return
        self.runner.start(f"Asking the Ray cluster at {address}", discover_ray, address, timeout=20)

    def show_discovery(self, discovery) -> None:
        self.discovery = discovery
        c = discovery.cluster
        alive = [n for n in c.nodes if n.alive]
        facts = ", ".join(x for x in (f"driver {c.driver_version}" if c.driver_version else "",
                                      f"CUDA {c.cuda_driver_version}" if c.cuda_driver_version else "",
                                      f"Ray {c.ray_version}" if c.ray_version else "") if x)
        text = f"<b>{c.gpu_total} GPU(s) on {len(alive)} node(s)</b> (from {c.source}{', ' + facts if facts else ''})"
        rams = sorted({round(n.memory_bytes / 2**30) for n in alive if n.memory_bytes})
        if rams:  # what CPU offload and LoRA's host copies are judged against (memory.host)
            span = f"{rams[0]}" if len(rams) == 1 else f"{rams[0]}-{rams[-1]}"
            text += f"; {span} GiB of host RAM a node"
        text += "".join(f"<br>{escaped(n)}" for n in c.notes)
        self.summary.setText(text)
        self.findings.setText(findings_html(discovery.findings))
        self._fill_gpus(c)
        self.topology.set_cluster(c)
        self.topology.summary.setVisible(not c.nodes)  # the step's own summary above says it once
        self._fill_matrix(alive[0] if alive else None)
        self.gpus.setVisible(self.gpus.rowCount() > 0 and c.source != "spec")  # a spec's table repeats the picture
        self.links_box.setVisible(not self.matrix.isHidden())
        self.use_button.setEnabled(c.to_gpu_spec() is not None)

    def _fill_gpus(self, cluster) -> None:
        rows = [(n, g) for n in cluster.nodes for g in n.gpus]
        self.gpus.setRowCount(len(rows))
        for r, (node, g) in enumerate(rows):
            gib = (lambda b: "?" if b is None else f"{b / 1024**3:.1f} GiB")
            busy = f"{len(g.processes)} process(es)" if g.processes else ""
            cells = [f"{node.name}:{g.index}" if len(cluster.nodes) > 1 else str(g.index),
                     g.name + (f" [{g.catalogue_id}]" if g.catalogue_id else ""), gib(g.memory_total_bytes),
                     gib(g.memory_free_bytes), "" if g.numa_node is None else str(g.numa_node),
                     g.cpu_affinity or "", busy]
            for col, value in enumerate(cells):
                self.gpus.setItem(r, col, QTableWidgetItem(value))
        for col in range(self.gpus.columnCount()):  # a column no source filled ("Free" of a spec) is not shown
            told = any((self.gpus.item(r, col).text() not in ("", "?")) for r in range(len(rows)))
            self.gpus.setColumnHidden(col, not told)
        self.gpus.resizeColumnsToContents()

    def _fill_matrix(self, node) -> None:
        n = len(node.gpus) if node else 0
        self.matrix.clear()
        self.matrix.setRowCount(n)
        self.matrix.setColumnCount(n)
        labels = [f"GPU{g.index}" for g in node.gpus] if node else []
        self.matrix.setHorizontalHeaderLabels(labels)
        self.matrix.setVerticalHeaderLabels(labels)
        self.matrix.verticalHeader().setVisible(True)
        for i in range(n):
            for j in range(n):
                link = node.link(node.gpus[i].index, node.gpus[j].index) if i != j else None
                item = QTableWidgetItem("X" if i == j else (link.label if link else "?"))
                item.setTextAlignment(Qt.AlignCenter)
                if link is not None:
                    item.setForeground(QColor("white"))
                    item.setBackground(QColor(LINK_COLOURS[link.kind]))
                    item.setToolTip(f"GPU{i} ↔ GPU{j}: {LINK_WORDS[link.kind]}; P2P read {link.p2p_read.value}, "
                                    f"write {link.p2p_write.value}")
                self.matrix.setItem(i, j, item)
        self.matrix.resizeColumnsToContents()
        self.matrix.setVisible(n > 1)
        self.legend.setVisible(n > 1)

    def show_topology(self) -> None:
        """Scroll the step to the picture of the GPUs and their links."""
        self.scroll.ensureWidgetVisible(self.topology, 0, 0)

    def use_discovery(self) -> None:
        if self.discovery is None:
            return
        self.doc.set_cluster(self.discovery.cluster)


# On the worker thread: the GPU catalogue is read there too.
def _detect(visible: str | None):
    from wizard.usecases.hardware import discover_this_machine
    from wizard.adapters.files.gpu_catalogue import load_gpu_catalogue

    return discover_this_machine(visible, load_gpu_catalogue())


def _read_spec(path: str):
    from wizard.usecases.hardware import load_cluster_spec_file
    from wizard.adapters.files.gpu_catalogue import load_gpu_catalogue

    return load_cluster_spec_file(path, load_gpu_catalogue())
