"""The generations dumps as verl 0.9.1 itself writes them: its own ``_write_generations`` (the writer behind
``trainer.rollout_data_dir`` and ``validation_data_dir``) fed numpy values like a run's, read back by the wizard."""

import numpy as np

from tests.conftest import need_verl
from wizard.adapters.files.run_folder import read_dumps
from wizard.core.run.samples.checks import StepHints, inspect_step


def test_verls_own_writer_is_read_sample_for_sample(tmp_path):
    need_verl()
    from verl.trainer.ppo.v1.trainer_base import PPOTrainer

    inputs = ["user\nwhat is 1 + 2 ?\nassistant\n"] * 4 + ["user\n你好\nassistant\n"] * 4
    outputs = ["#### 3", "#### 4", "the answer is #### 3", "", "我很好", "我很好", "我很好", "我很好"]
    uids = [f"0b6f5c9e-1e7a-4c1b-9a55-7f3c2a1d9e{g}0_{i}_0" for g in (1, 2) for i in range(4)]
    PPOTrainer._write_generations(inputs, outputs, ["3"] * 4 + [None] * 4,
                                  [np.float32(1), np.float64(0), 1.0, 0.0, 0.5, 0.5, 0.5, 0.5],
                                  {"uid": uids, "acc": [np.bool_(True)] * 8}, str(tmp_path), 12)
    problems = []
    steps = read_dumps(tmp_path, problems)
    assert problems == [] and list(steps) == [12]
    samples = steps[12]
    assert [s.response for s in samples] == outputs and [s.score for s in samples] == [1, 0, 1, 0, .5, .5, .5, .5]
    assert [s.answer for s in samples] == [0, 1, 2, 3] * 2 and samples[0].extra == {"acc": True}
    assert samples[4].ground_truth is None and len({s.group for s in samples}) == 2
    got = inspect_step(samples, StepHints(max_response_length=512))
    assert got.flags[3] == ("empty",) and got.flags[4] == ("same text", "same score")
    assert got.verdict.same_text_groups == 1 and got.verdict.same_score_groups == 1
