"""What the Review step lists as "Changes from verl's defaults": only what changes verl's resolved default, every
scalar written one way."""

from wizard.adapters.files.resources import load_schema
from wizard.core.verl.key_help import changes_from_defaults, set_to_default

OVERRIDES = [
    "actor_rollout_ref.actor.use_kl_loss=True",  # a change, written as Python writes it
    "actor_rollout_ref.rollout.n=5",
    "algorithm.use_kl_in_reward=False",  # verl's default again
    "trainer.nnodes=1",
    "actor_rollout_ref.rollout.gpu_memory_utilization=0.5",
    "data.train_batch_size=1024.0",  # 1024 is the default: a float of it is no change either
]


def test_values_equal_to_verls_default_are_not_changes_and_booleans_are_written_one_way():
    schema = load_schema()
    assert changes_from_defaults(schema, OVERRIDES) == [
        ("actor_rollout_ref.actor.use_kl_loss", "true", "false"),
        ("actor_rollout_ref.rollout.n", "5", "1"),
    ]
    assert set_to_default(schema, OVERRIDES) == [
        "algorithm.use_kl_in_reward", "trainer.nnodes", "actor_rollout_ref.rollout.gpu_memory_utilization",
        "data.train_batch_size"]


def test_true_is_not_one_and_a_deletion_or_an_unknown_key_stays_a_change():
    schema = load_schema()
    rows = changes_from_defaults(schema, ["trainer.nnodes=true", "~trainer.val_before_train", "+foo.bar=1"])
    assert [r[0] for r in rows] == ["trainer.nnodes", "trainer.val_before_train", "foo.bar"]
