"""The Write step's cluster part: the same plan as Ray head/worker scripts, `ray job submit`, SLURM, KubeRay.

The files are the ones `verl-wizard cluster` writes (wizard.core.cluster_launch.ray_scripts, wizard.adapters.files.cluster_files),
checked for the cluster's shape first with the same full check.
"""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
)

from wizard.gui.document import PlanDocument
from wizard.gui.wording import window_text

TARGET_TEXT = {"ray": "Ray scripts (ray-head.sh, ray-worker.sh, submit.sh)", "slurm": "SLURM (slurm.sbatch)",
               "kuberay": "KubeRay (kuberay-rayjob.yaml)"}


class ClusterBox(QGroupBox):
    def __init__(self, doc: PlanDocument, folder: QLineEdit) -> None:
        super().__init__("For a cluster: launch material on Ray")
        self.doc, self.folder = doc, folder
        self.targets = {name: QCheckBox(text) for name, text in TARGET_TEXT.items()}
        for box in self.targets.values():
            box.setChecked(True)
        self.nodes = QSpinBox(minimum=1, maximum=4096)
        self.gpus = QSpinBox(minimum=1, maximum=64)
        self.head = QLineEdit()
        self.head.setPlaceholderText("the head node's address, e.g. 10.0.0.7 (empty: the scripts ask for it)")
        self.image = QLineEdit()
        self.image.setPlaceholderText("KubeRay image (empty: verl's image for the rollout engine)")
        self.write_button = QPushButton("Write &cluster files")
        self.write_button.clicked.connect(self.write)
        self.status = QLabel()
        self.status.setObjectName("clusterStatus")
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextSelectableByMouse)
        form = QFormLayout()
        row = QHBoxLayout()
        row.addWidget(self.nodes)
        row.addWidget(QLabel("nodes ×"))
        row.addWidget(self.gpus)
        row.addWidget(QLabel("GPUs each"))
        row.addStretch(1)
        form.addRow("Shape:", row)
        form.addRow("Head &address:", self.head)
        form.addRow("&Image:", self.image)
        layout = QVBoxLayout(self)
        for box in self.targets.values():
            layout.addWidget(box)
        layout.addLayout(form)
        layout.addWidget(self.write_button, 0, Qt.AlignLeft)
        layout.addWidget(self.status)
        doc.changed.connect(self.refresh)
        self.refresh()

    def refresh(self) -> None:
        hw = self.doc.plan.hardware
        self.nodes.setValue(hw.nnodes or 1)
        self.gpus.setValue(hw.n_gpus_per_node or 1)

    def out_dir(self) -> Path:
        return Path(os.path.expanduser(self.folder.text().strip() or "verl-run")) / "cluster"

    def write(self) -> bool:
        """Write the ticked launch material behind the same check gate as ``verl-wizard cluster``."""
        from wizard.adapters.files.disk import WriteError
        from wizard.core.cluster_launch import target_for
        from wizard.core.cluster_launch.job import upload_folder
        from wizard.usecases.writing import write_cluster

        from wizard.gui.document import FIELDS

        if unread := self.doc.context_findings.get(FIELDS):  # text a field could not take: not what the plan holds
            self.status.setText("<span style='color:#c62828'>Not written: " + "; ".join(
                _html(window_text(f.message)) for f in unread[:3]) + "</span>")
            return False
        chosen = tuple(name for name, box in self.targets.items() if box.isChecked())
        if not chosen:
            self.status.setText("Tick at least one kind of launch material.")
            return False
        out = self.out_dir()
        try:
            target = target_for(self.doc.plan, nodes=self.nodes.value(), gpus_per_node=self.gpus.value(),
                                head_address=self.head.text().strip() or None, image=self.image.text().strip() or None,
                                working_dir=upload_folder(str(out.parent.resolve()), str(out.resolve())))
            outcome = write_cluster(self.doc.plan, target, chosen, out)
        except (ValueError, WriteError) as exc:
            self.status.setText(f"<span style='color:#c62828'>{_html(str(exc))}</span>")
            return False
        if outcome.written is None:
            errors = [f for f in outcome.assessment.findings if f.severity.value == "error"]
            self.status.setText("<span style='color:#c62828'>Not written: on this shape verl would stop with "
                                + "; ".join(_html(window_text(f.message)) for f in errors[:3]) + "</span>")
            return False
        written = outcome.written
        lines = [f"Wrote {p}" for p in written.files] + [f"Kept the previous file as {p}" for p in written.backups]
        lines += [f"Note: {window_text(n)}" for n in outcome.material.notes]
        self.status.setText("<br>".join(_html(x) for x in lines))
        return True


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
