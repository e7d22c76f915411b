"""The Model step: the policy, critic and reward model, and what the wizard knows of each (layers, heads,
context, KV cache), read from the folder or the catalogue by the check."""

from __future__ import annotations

import os

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog, QHBoxLayout, QPushButton, QTableWidget, QTableWidgetItem

from wizard.gui.document import PlanDocument
from wizard.gui.steps import texts
from wizard.gui.steps._form import FormPage
from wizard.gui.widgets.page import note


class ModelPage(FormPage):
    step, title, subtitle = texts("model")
    groups = [
        ("Policy (actor, rollout and reference share it)", [
            ("models.actor_path", "Model (folder or hub id)"),
            ("models.trust_remote_code", "Trust remote code"),
            ("models.enable_gradient_checkpointing", "Gradient checkpointing"),
            ("models.use_remove_padding", "Remove padding"),
            ("models.lora_rank", "LoRA rank (0 = full fine-tune)"),
            ("models.lora_alpha", "LoRA alpha"),
        ]),
        ("Critic (PPO with GAE only)", [
            ("models.critic_enable", "Critic"),
            ("models.critic_path", "Critic model"),
        ]),
        ("Reward model (when rewards are not a rule function)", [
            ("models.reward_model_enable", "Reward model"),
            ("models.reward_model_path", "Reward model path"),
        ]),
    ]

    def __init__(self, doc: PlanDocument) -> None:
        super().__init__(doc)
        browse = QPushButton("Choose a local model &folder…")
        browse.clicked.connect(self._browse)
        row = QHBoxLayout()  # under the model's own field, where it is read (not below the page's fold)
        row.addWidget(browse, 0, Qt.AlignTop)
        row.addWidget(note(
            "A hub id (like Qwen/Qwen2.5-0.5B-Instruct) is downloaded by each worker at start; on a cluster, "
            "download it once to a shared folder and give the folder instead.", "modelNote"), 1)
        self.boxes[0].layout().addLayout(row)
        self.facts = QTableWidget(0, 2)
        self.facts.setObjectName("modelFacts")
        self.facts.setAccessibleName("Model facts")
        self.facts.setHorizontalHeaderLabels(["Fact", "Value"])
        self.facts.verticalHeader().setVisible(False)
        self.facts.horizontalHeader().setStretchLastSection(True)
        self.facts.setEditTriggers(QTableWidget.NoEditTriggers)
        self.facts.setMinimumHeight(200)
        self.facts_title = note("", "modelFactsTitle")
        self.body_layout.addWidget(self.facts_title)
        self.body_layout.addWidget(self.facts)
        doc.changed.connect(self.show_facts)
        self.finish()
        self.show_facts()

    def show_facts(self) -> None:
        """What the wizard knows of each model the plan names (read from the folder or the catalogue)."""
        models = self.doc.result.models if self.doc.result is not None else {}
        if not models:
            self.facts_title.setText("No model facts: the model is neither a local folder nor in the catalogue "
                                     "of popular models, so heads, context and memory are not checked.")
            self.facts.hide()
            return
        rows = []
        for role, m in models.items():
            where = {"local": "from its folder", "guess": "sized as the catalogue model it is named after, a guess"}
            rows += [(f"{role}: model", f"{m.name} ({where.get(m.source, 'from the catalogue')})"),
                     (f"{role}: parameters", f"{m.param_count / 1e9:.2f} B"),
                     (f"{role}: layers × hidden", f"{m.num_layers} × {m.hidden_size}"),
                     (f"{role}: attention heads / KV heads", f"{m.num_attention_heads} / {m.num_kv_heads}"),
                     (f"{role}: vocabulary", f"{m.vocab_size}{' (tied embeddings)' if m.tie_word_embeddings else ''}"),
                     (f"{role}: context", str(m.max_position_embeddings or "unknown")),
                     (f"{role}: KV cache per token (bf16)", f"{m.kv_bytes_per_token() / 1024:.0f} KiB")]
            if m.architecture:
                rows.append((f"{role}: architecture", m.architecture))
        self.facts_title.setText("What verl-wizard knows about the models (the checks on heads, context and "
                                 "memory use these):")
        self.facts.setRowCount(len(rows))
        for r, (name, value) in enumerate(rows):
            self.facts.setItem(r, 0, QTableWidgetItem(name))
            self.facts.setItem(r, 1, QTableWidgetItem(value))
        self.facts.resizeColumnToContents(0)
        self.facts.show()

    def _browse(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Model folder (with config.json)", os.path.expanduser("~"))
        if path:
            plan = self.doc.plan.model_copy(deep=True)
            plan.models.actor_path = path
            self.doc.set_plan(plan, text=f"Set actor model = {path}")
