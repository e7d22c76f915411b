"""The steps that are forms over the Plan: Model, Data, Algorithm, Rollout & training."""

from __future__ import annotations

import os

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from wizard.core.findings import Severity
from wizard.core.check.rules.names import ESTIMATORS, KL_TYPES, LOSS_MODES, REWARD_MANAGERS
from wizard.gui.document import PlanDocument
from wizard.gui.widgets.fields import FieldForm
from wizard.gui.widgets.page import Page, note, scrolled
from wizard.gui.widgets.task_bar import TaskBar
from wizard.gui.workers import Worker
from wizard.gui import steps

# One line per estimator, in a newcomer's words (verl/trainer/ppo/core_algos.py holds the maths).
ESTIMATOR_HELP = {
    "gae": "PPO: a critic model learns values; advantages from them (GAE). Costs a second trained model.",
    "grpo": "GRPO: n answers per prompt, each scored against its group's mean (and spread). No critic; n ≥ 2.",
    "reinforce_plus_plus": "REINFORCE++: token-level returns normalised over the batch. No critic.",
    "reinforce_plus_plus_baseline": "REINFORCE++ with the group mean as baseline. No critic; n ≥ 2.",
    "remax": "ReMax: a greedy answer per prompt is the baseline (one extra generation). No critic.",
    "rloo": "RLOO: each answer is compared with the mean of the other answers to its prompt. No critic; n ≥ 2.",
    "opo": "OPO: group baseline weighted by answer length (on-policy optimal baseline). n ≥ 2.",
    "grpo_passk": "GRPO for pass@k: only the best answer of a group is pushed up. n ≥ 2.",
    "gpg": "GPG: group policy gradient, a simpler group baseline without the PPO clip. n ≥ 2.",
    "rloo_vectorized": "RLOO, vectorised implementation. n ≥ 2.",
    "grpo_vectorized": "GRPO, vectorised implementation. n ≥ 2.",
    "gdpo": "GDPO: group-relative advantages per reward component. n ≥ 2.",
    "optimal_token_baseline": "Token-level optimal baseline (variance-minimising).",
    "tir_optimal_token_baseline": "Optimal token baseline for tool-integrated rollouts.",
}

KL_CHOICES = [
    ("none", "No KL penalty (no reference model is loaded)"),
    ("loss", "KL in the actor loss (GRPO-style: use_kl_loss)"),
    ("reward", "KL subtracted from the reward (PPO-style: use_kl_in_reward)"),
]


class FormPage(Page):
    """A page of grouped FieldForms, with room for extra widgets below."""

    groups: list[tuple[str, list[tuple]]] = []

    def __init__(self, doc: PlanDocument) -> None:
        super().__init__(doc)
        self.body = QWidget()
        self.body_layout = QVBoxLayout(self.body)
        for title, rows in self.groups:
            box = QGroupBox(title)
            form = FieldForm(doc, rows)
            QVBoxLayout(box).addWidget(form)
            self.forms.append(form)
            self.body_layout.addWidget(box)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(scrolled(self.body))

    def finish(self) -> None:
        self.body_layout.addStretch(1)


class ModelPage(FormPage):
    step, title, subtitle = steps.MODEL
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
        self.body_layout.addWidget(browse, 0, Qt.AlignLeft)
        self.body_layout.addWidget(note(
            "A hub id (like Qwen/Qwen2.5-0.5B-Instruct) is downloaded by each worker at start; on a cluster, "
            "download it once to a shared folder and give the folder instead.", "modelNote"))
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
            rows += [(f"{role}: model", f"{m.name} ({'from its folder' if m.source == 'local' else 'from the catalogue'})"),
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


class DataPage(FormPage):
    step, title, subtitle = steps.DATA
    groups = [
        ("Files", [
            ("data.train_files", "Training file(s)"),
            ("data.val_files", "Validation file(s)"),
            ("data.prompt_key", "Prompt column"),
        ]),
        ("Sizes", [
            ("data.train_batch_size", "Prompts per step"),
            ("data.max_prompt_length", "Max prompt tokens"),
            ("data.max_response_length", "Max response tokens"),
            ("data.filter_overlong_prompts", "Drop prompts that are too long"),
            ("data.shuffle", "Shuffle"),
        ]),
    ]

    def __init__(self, doc: PlanDocument) -> None:
        super().__init__(doc)
        self.runner = Worker(self)
        buttons = QHBoxLayout()
        self.preview_button = QPushButton("&Preview the training file")
        self.preview_button.clicked.connect(self.preview)
        self.check_button = QPushButton("Chec&k the training file")
        self.check_button.clicked.connect(self.check)
        self.target_python = lambda: ""  # the window points it at the Environment step's Python
        self.convert_button = QPushButton("Con&vert a file…")
        self.convert_button.setToolTip("Turn a JSONL/CSV/parquet of questions and answers into verl's format")
        self.convert_button.clicked.connect(self.open_convert)
        self.reward_button = QPushButton("&Test the reward…")
        self.reward_button.setToolTip("Score sample rows with verl's scorer or your reward function, before training")
        self.reward_button.clicked.connect(self.open_reward_bench)
        self._reward_dialog = None
        buttons.addWidget(self.preview_button)
        buttons.addWidget(self.check_button)
        buttons.addWidget(self.convert_button)
        buttons.addWidget(self.reward_button)
        buttons.addStretch(1)
        self.body_layout.addLayout(buttons)
        self.body_layout.addWidget(TaskBar(self.runner))
        self.status = note("", "dataStatus")
        self.body_layout.addWidget(self.status)
        self.table = QTableWidget()
        self.table.setObjectName("dataPreview")
        self.table.setAccessibleName("Data preview")
        self.table.setMinimumHeight(180)
        self.table.hide()
        self.body_layout.addWidget(self.table)
        self.runner.finished.connect(self._show)
        self.runner.failed.connect(lambda msg: self.status.setText(f"<span style='color:#c62828'>{msg}</span>"))
        self.finish()

    def open_reward_bench(self) -> None:
        from wizard.gui.tools.reward_bench import RewardBenchDialog

        if self._reward_dialog is None:
            self._reward_dialog = RewardBenchDialog(self.doc, self.target_python, self)
        self._reward_dialog.show()
        self._reward_dialog.raise_()

    def open_convert(self) -> None:
        from wizard.gui.tools.convert_dialog import ConvertDialog

        dialog = ConvertDialog(self.doc, self)
        dialog.setAttribute(Qt.WA_DeleteOnClose)
        dialog.show()

    def _train_file(self) -> str | None:
        files = self.doc.plan.data.train_files
        first = files[0] if isinstance(files, list) and files else files
        if not first:
            self.status.setText("Set a training file first.")
            return None
        return os.path.expandvars(os.path.expanduser(str(first)))

    def preview(self) -> None:
        path = self._train_file()
        if path:
            from wizard.adapters.dataset import preview

            self.runner.start(f"Reading the first rows of {path}", preview, path, 20)

    def check(self) -> None:
        path = self._train_file()
        if not path:
            return
        from wizard.adapters.dataset import check_file

        plan = self.doc.plan
        model = plan.models.actor_path if plan.models.actor_path and os.path.isdir(plan.models.actor_path) else None
        self.runner.start(
            f"Checking {path}", check_file, path, batch_size=plan.data.train_batch_size, model_dir=model,
            max_prompt_length=plan.data.max_prompt_length, filter_overlong=bool(plan.data.filter_overlong_prompts),
            has_custom_reward=bool(plan.reward.custom_function_path), prompt_key=plan.data.prompt_key or "prompt")

    def _show(self, result) -> None:
        from wizard.adapters.dataset import DataReport, Preview

        if isinstance(result, Preview):
            rows = f"{result.num_rows} rows" if result.num_rows is not None else "rows: unknown until read"
            self.status.setText(f"{result.path}: {result.format}, {rows}, read in {result.seconds * 1000:.0f} ms")
            self.table.setColumnCount(len(result.columns))
            self.table.setHorizontalHeaderLabels(result.columns)
            self.table.setRowCount(len(result.rows))
            for r, row in enumerate(result.rows):
                for c, col in enumerate(result.columns):
                    text = str(row.get(col, ""))
                    item = QTableWidgetItem(text if len(text) < 300 else text[:300] + "…")
                    item.setToolTip(text[:2000])
                    self.table.setItem(r, c, item)
            self.table.show()
        elif isinstance(result, DataReport):
            worst = [f for f in result.findings if f.severity is not Severity.INFO]
            lines = [f"{result.path}: {result.rows} rows, checked in {result.seconds:.1f} s"]
            lines += [f"• {f.severity.value}: {f.message}" + (f" — fix: {f.fix}" if f.fix else "") for f in worst]
            if not worst:
                lines.append("The rows have the columns verl expects.")
            self.status.setText("<br>".join(_html(x) for x in lines))


class AlgorithmPage(FormPage):
    step, title, subtitle = steps.ALGORITHM
    groups = [
        ("Advantage", [
            ("algorithm.adv_estimator", "Estimator", ESTIMATORS),
            ("rollout.n", "Answers per prompt (n)"),
            ("algorithm.norm_adv_by_std_in_grpo", "Divide by the group's spread (GRPO)"),
            ("algorithm.gamma", "Discount (gamma, GAE)"),
            ("algorithm.lam", "GAE lambda"),
        ]),
        ("KL to the reference model", [
            ("algorithm.kl_loss_coef", "KL loss coefficient"),
            ("algorithm.kl_loss_type", "KL loss type", KL_TYPES),
            ("algorithm.kl_coef", "KL reward coefficient"),
        ]),
        ("Policy loss", [
            ("algorithm.loss_mode", "Loss mode", LOSS_MODES),
            ("algorithm.loss_agg_mode", "Loss aggregation", ("token-mean", "seq-mean-token-sum", "seq-mean-token-mean",
                                                             "seq-mean-token-sum-norm")),
            ("algorithm.clip_ratio_low", "Clip ratio low"),
            ("algorithm.clip_ratio_high", "Clip ratio high (DAPO: 0.28)"),
            ("algorithm.entropy_coeff", "Entropy bonus"),
            ("algorithm.ppo_epochs", "PPO epochs per batch"),
        ]),
        ("Reward", [
            ("reward.manager", "Reward manager", REWARD_MANAGERS),
            ("reward.custom_function_path", "Custom reward file"),
            ("reward.custom_function_name", "Function name"),
        ]),
    ]

    def __init__(self, doc: PlanDocument) -> None:
        super().__init__(doc)
        self.explain = note("", "estimatorHelp")
        self.body_layout.insertWidget(0, self.explain)
        self.kl = QComboBox()
        self.kl.setObjectName("klPlacement")
        self.kl.setAccessibleName("KL placement")
        for value, text in KL_CHOICES:
            self.kl.addItem(text, value)
        self.kl.setToolTip("Where the KL to the reference policy goes. Either one loads a reference model "
                           "(CPU-offloaded by verl); 'none' saves that memory and time.")
        self.kl.activated.connect(self._kl_chosen)
        row = QHBoxLayout()
        row.addWidget(QLabel("KL placement:", buddy=self.kl))
        row.addWidget(self.kl, 1)
        self.body_layout.insertLayout(1, row)
        dapo = QPushButton("Use &DAPO-style clipping (clip-higher 0.28, token-mean loss)")
        dapo.clicked.connect(self._dapo)
        self.body_layout.addWidget(dapo, 0, Qt.AlignLeft)
        doc.changed.connect(self.refresh)
        self.finish()
        self.refresh()

    def refresh(self) -> None:
        a = self.doc.plan.algorithm
        est = a.adv_estimator or "gae"
        text = ESTIMATOR_HELP.get(est, "An estimator verl 0.9.1 does not ship: check the name.")
        if any(f.rule == "advice.group_size" for f in self.doc.findings):  # the core's rule says when
            text += " <b>Set n to 2 or more.</b>"
        self.explain.setText(f"<b>{est}</b>: {text}")
        value = "loss" if a.use_kl_loss else "reward" if a.use_kl_in_reward else "none"
        self.kl.setCurrentIndex(self.kl.findData(value))

    def _kl_chosen(self, _index: int) -> None:
        value = self.kl.currentData()
        plan = self.doc.plan.model_copy(deep=True)
        plan.algorithm.use_kl_loss = value == "loss"
        plan.algorithm.use_kl_in_reward = value == "reward"
        self.doc.set_plan(plan, text=f"KL placement: {value}")

    def _dapo(self) -> None:
        plan = self.doc.plan.model_copy(deep=True)
        plan.algorithm.clip_ratio_low, plan.algorithm.clip_ratio_high = 0.2, 0.28
        plan.algorithm.loss_agg_mode = "token-mean"
        self.doc.set_plan(plan, text="DAPO-style clipping")

    def focus_key(self, key: str) -> bool:
        if key in ("actor_rollout_ref.actor.use_kl_loss", "algorithm.use_kl_in_reward"):
            self.kl.setFocus(Qt.OtherFocusReason)
            return True
        return super().focus_key(key)


class RolloutPage(FormPage):
    step, title, subtitle = steps.ROLLOUT
    groups = [
        ("Rollout engine", [
            ("rollout.name", "Engine", ("vllm", "sglang", "trtllm")),
            ("rollout.tensor_model_parallel_size", "Tensor parallel size"),
            ("rollout.gpu_memory_utilization", "GPU memory share"),
            ("rollout.max_num_batched_tokens", "Max batched tokens"),
            ("rollout.max_num_seqs", "Max concurrent sequences"),
            ("rollout.temperature", "Temperature"),
            ("rollout.top_p", "Top-p"),
            ("rollout.enforce_eager", "No CUDA graphs (eager)"),
            ("rollout.free_cache_engine", "Free the KV cache while training"),
            ("rollout.log_prob_micro_batch_size_per_gpu", "Log-prob micro batch per GPU"),
        ]),
        ("Actor update", [
            ("training.actor_lr", "Learning rate"),
            ("training.ppo_mini_batch_size", "Mini batch (prompts per update)"),
            ("training.ppo_micro_batch_size_per_gpu", "Micro batch per GPU"),
            ("training.use_dynamic_bsz", "Dynamic batch (token budget)"),
            ("training.ppo_max_token_len_per_gpu", "Token budget per GPU"),
            ("training.ref_log_prob_micro_batch_size_per_gpu", "Reference log-prob micro batch per GPU"),
            ("placement.actor_param_offload", "Offload actor weights to CPU"),
            ("placement.actor_optimizer_offload", "Offload optimizer to CPU"),
        ]),
        ("Critic update (GAE)", [
            ("training.critic_lr", "Critic learning rate"),
            ("training.critic_ppo_mini_batch_size", "Critic mini batch"),
            ("training.critic_ppo_micro_batch_size_per_gpu", "Critic micro batch per GPU"),
            ("trainer.critic_warmup", "Critic warm-up steps"),
        ]),
        ("Trainer", [
            ("trainer.total_epochs", "Epochs"),
            ("trainer.total_training_steps", "Steps (overrides epochs)"),
            ("trainer.logger", "Loggers (comma separated)"),
            ("trainer.project_name", "Project"),
            ("trainer.experiment_name", "Experiment"),
            ("trainer.save_freq", "Save every N steps"),
            ("trainer.test_freq", "Validate every N steps"),
            ("trainer.val_before_train", "Validate before training"),
            ("trainer.resume_mode", "Resume", ("auto", "disable", "resume_path")),
            ("trainer.default_local_dir", "Checkpoint folder"),
        ]),
    ]

    def __init__(self, doc: PlanDocument) -> None:
        super().__init__(doc)
        self.finish()


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
