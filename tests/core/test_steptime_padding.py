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
    # the same 40 prompts in mini-batches of 10 (40 sequences, whole over 8 GPUs): nothing padded, and the same
    # generation (the synthetic ones are never generated)
    unpadded = step_time(plan([*EIGHT, "data.train_batch_size=40", f"{A}.ppo_mini_batch_size=10"], "8xH100-80GB", Q15))
    assert not any("synthetic" in a for a in unpadded.assumptions)
    gen = [p.seconds for st in (padded, unpadded) for p in st.phases if p.name == "gen"]
    assert gen[0] == gen[1]


def test_each_local_update_of_a_step_is_padded_on_its_own():
    """parameter_sync_step S: each of the step's S local updates samples train_batch_size / S prompts and is padded
    on its own (trainer_base.py:533-556): 296 prompts x 5 at S = 4 pad 4 x 910, not 910 once."""
    extra = ["trainer.n_gpus_per_node=8", "data.train_batch_size=296", f"{A}.ppo_mini_batch_size=256",
             "actor_rollout_ref.rollout.n=5"]
    one = step_time(plan(extra, "8xH100-80GB", Q15))
    four = step_time(plan([*extra, "+trainer.v1.sync.parameter_sync_step=4"], "8xH100-80GB", Q15))
    assert any("pads each step with 1,080 synthetic" in a for a in one.assumptions)
    assert any("pads each step with 3,640 synthetic" in a for a in four.assumptions)
    assert update(four).seconds > update(one).seconds


def test_megatron_pads_to_its_own_data_parallel_ranks():
    """Megatron's data-parallel ranks are the GPUs over TP x PP x CP (16 / (4 x 2) = 2), not the GPUs: 6 prompts x 2
    in mini-batches of 2 x 2 are whole there (they were said to be padded to 16)."""
    from tests.helpers.memory_values import full
    from wizard.core.memory.batching import synthetic_sequences

    values = full({"actor_rollout_ref.actor.strategy": "megatron", "trainer.n_gpus_per_node": 8, "trainer.nnodes": 2,
                   "actor_rollout_ref.actor.megatron.tensor_model_parallel_size": 4,
                   "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size": 2,
                   "data.train_batch_size": 6, "actor_rollout_ref.rollout.n": 2, f"{A}.ppo_mini_batch_size": 2,
                   "algorithm.adv_estimator": "grpo"}, "megatron")
    assert synthetic_sequences(values) == 0
    assert synthetic_sequences({**values, "data.train_batch_size": 5}) == 2  # 10 sequences to a multiple of 4
