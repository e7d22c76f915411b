"""The V1 trainer's synthetic padding in the step time: a train_batch_size x n that is not a whole number of
mini-batches over the data-parallel ranks is padded every step with 128-token sequences (batch.padded_step warns of
it), which are never generated but go through every log-prob pass and update."""

from tests.core.test_advice import A, Q15, plan
from wizard.usecases.advising import step_time

EIGHT = ["trainer.n_gpus_per_node=8", f"{A}.strategy=fsdp2", "actor_rollout_ref.ref.strategy=fsdp2",
         f"{A}.ppo_mini_batch_size=16", f"{A}.ppo_micro_batch_size_per_gpu=1"]


def update(st):
    return next(p for p in st.phases if p.name == "update_actor")


def test_a_padded_step_trains_its_synthetic_sequences_and_says_so():
    # 40 prompts x 4 = 160 sequences, padded to a multiple of 16 x 4 = 64: 192, 32 of them synthetic (128 tokens)
    padded = step_time(plan([*EIGHT, "data.train_batch_size=40"], "8xH100-80GB", Q15))
    whole = step_time(plan([*EIGHT, "data.train_batch_size=32"], "8xH100-80GB", Q15))  # 128: no padding
    assert any("pads each step with 32 synthetic sequences of 128 tokens" in a for a in padded.assumptions)
    assert not any("synthetic" in a for a in whole.assumptions)
    per_sequence = next(t for t in update(padded).terms if t.label == "per sequence")
    assert per_sequence.note.startswith("24 x")  # 192 sequences over 8 GPUs, not the 20 generated
    # three mini-batches of 64, where 40 prompts' own 160 sequences would make two and a half
    assert update(padded).seconds > update(whole).seconds * 1.25
    gen = [p.seconds for st in (padded, whole) for p in st.phases if p.name == "gen"]
    assert gen[0] >= gen[1]  # generated: only the real ones
