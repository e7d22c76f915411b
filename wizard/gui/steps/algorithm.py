"""The Algorithm step: the advantage estimator (in a newcomer's words), where the KL goes, the policy loss and
the reward function."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QPushButton

from wizard.core.check import ESTIMATORS, KL_TYPES, LOSS_MODES, REWARD_MANAGERS
from wizard.gui.document import PlanDocument
from wizard.gui.steps import texts
from wizard.gui.steps._form import FormPage
from wizard.gui.widgets.page import note

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


class AlgorithmPage(FormPage):
    step, title, subtitle = texts("algorithm")
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
