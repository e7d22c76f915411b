"""Model facts read from real folders under tmp_path and from the shipped catalogue; never the network."""

import datetime
import json
import shlex
from pathlib import Path

import pytest

from tests.helpers.tiny_model import write_tiny_model
from wizard.adapters.files.model_facts import (
    download_command, load_catalogue, load_model_facts, load_models_for, lookup_findings,
)
from wizard.adapters.files.model_files import safetensors_param_count
from wizard.core.models.facts import ModelConfigError

HEADS14 = {"hidden_size": 56, "num_attention_heads": 14, "num_key_value_heads": 2, "tie_word_embeddings": False}


def rules(lookup):
    return [f.rule for f in lookup.findings]


def test_a_sharded_checkpoint_gives_sizes_from_its_headers(tmp_path):
    folder = write_tiny_model(tmp_path / "m", config=HEADS14, shards=2)
    lookup = load_model_facts(str(folder))
    f = lookup.facts
    assert lookup.local and lookup.findings == []
    assert f.num_attention_heads == 14 and f.head_dim == 4 and f.source == "local"
    assert f.has_tokenizer and f.has_chat_template and f.has_weights
    assert f.param_count_from_weights == f.computed_param_count  # headers hold exactly the config's tensors
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    assert f.weight_bytes == index["metadata"]["total_size"] == 2 * f.computed_param_count  # float16 zeros


def test_a_single_file_checkpoint_without_index(tmp_path):
    folder = write_tiny_model(tmp_path / "m", shards=1)
    f = load_model_facts(str(folder)).facts
    assert f.param_count_from_weights == f.computed_param_count
    assert f.weight_bytes == (folder / "model.safetensors").stat().st_size


def test_only_the_header_is_read(tmp_path):
    folder = write_tiny_model(tmp_path / "m", shards=1)
    path = folder / "model.safetensors"
    header_len = int.from_bytes(path.read_bytes()[:8], "little")
    with path.open("r+b") as fh:  # scribble over the tensor data: the count must not notice
        fh.seek(8 + header_len)
        fh.write(b"\xff" * 64)
    assert safetensors_param_count(path) == load_model_facts(str(folder)).facts.computed_param_count


def test_malformed_config_is_a_finding_not_a_traceback(tmp_path):
    folder = write_tiny_model(tmp_path / "m")
    (folder / "config.json").write_text('{"hidden_size": 64,\n "num_hidden_layers": }')
    lookup = load_model_facts(str(folder))
    (f,) = lookup.findings
    assert lookup.facts is None and f.rule == "models.config_unreadable" and f.severity.value == "error"
    assert "line 2" in f.message and "config.json" in f.message


def test_config_without_the_sizes_is_a_warning(tmp_path):
    folder = write_tiny_model(tmp_path / "m")
    (folder / "config.json").write_text(json.dumps({"architectures": ["BertModel"], "model_type": "bert"}))
    (f,) = load_model_facts(str(folder)).findings
    assert f.rule == "models.config_layout" and "no hidden_size" in f.message and f.severity.value == "warning"


def test_missing_config_and_missing_tokenizer(tmp_path):
    folder = write_tiny_model(tmp_path / "m")
    (folder / "config.json").unlink()
    assert rules(load_model_facts(str(folder))) == ["models.config_missing"]
    bare = write_tiny_model(tmp_path / "bare", tokenizer=False)
    assert load_model_facts(str(bare)).facts.has_tokenizer is False


@pytest.mark.parametrize("files, has_tokenizer", [
    (["tokenizer.model"], True), (["vocab.json", "merges.txt"], True), (["vocab.json"], False), ([], False),
])
def test_tokenizer_forms(tmp_path, files, has_tokenizer):
    folder = write_tiny_model(tmp_path / "m", tokenizer=False)
    for name in files:
        (folder / name).write_text("x")
    assert load_model_facts(str(folder)).facts.has_tokenizer is has_tokenizer


def test_chat_template_from_a_jinja_file(tmp_path):
    folder = write_tiny_model(tmp_path / "m", chat_template=False)
    assert load_model_facts(str(folder)).facts.has_chat_template is False
    (folder / "chat_template.jinja").write_text("{{ messages }}")
    assert load_model_facts(str(folder)).facts.has_chat_template is True


def test_broken_and_incomplete_checkpoints(tmp_path):
    folder = write_tiny_model(tmp_path / "m", shards=2)
    (folder / "model-00002-of-00002.safetensors").unlink()
    lookup = load_model_facts(str(folder))
    assert rules(lookup) == ["models.weights_incomplete"] and "1 are missing" in lookup.findings[0].message
    corrupt = write_tiny_model(tmp_path / "c", shards=1)
    (corrupt / "model.safetensors").write_bytes((10**12).to_bytes(8, "little") + b"{}")
    lookup = load_model_facts(str(corrupt))
    assert rules(lookup) == ["models.weights_unreadable"] and lookup.facts.param_count_from_weights is None


def test_bin_weights_are_only_sized(tmp_path):
    folder = write_tiny_model(tmp_path / "m")
    (folder / "pytorch_model.bin").write_bytes(b"\0" * 1000)
    f = load_model_facts(str(folder)).facts
    assert f.has_weights and f.weight_bytes == 1000 and f.param_count_from_weights is None
    assert load_model_facts(str(write_tiny_model(tmp_path / "n"))).facts.has_weights is False


def test_paths_that_look_local_but_are_not_there(tmp_path):
    for ref in (str(tmp_path / "nope"), "./nope/model", "~/no-such-model-dir-xyz", "a/b/c", "no-such-folder"):
        (f,) = load_model_facts(ref).findings
        assert f.rule == "models.path_missing" and f.severity.value == "warning" and ref in f.message
    file_ref = tmp_path / "file"
    file_ref.write_text("x")
    assert rules(load_model_facts(str(file_ref))) == ["models.not_a_folder"]
    assert rules(load_model_facts("hdfs://cluster/models/m")) == ["models.remote_path"]


def test_hub_id_from_the_catalogue_gives_facts_and_the_download_command():
    lookup = load_model_facts("qwen/qwen2.5-7b-instruct")  # hub ids are matched case-insensitively
    assert not lookup.local and lookup.facts.name == "Qwen/Qwen2.5-7B-Instruct"
    assert lookup.facts.num_attention_heads == 28 and lookup.facts.verified and not lookup.facts.gated
    (f,) = lookup.findings
    command, folder = download_command("Qwen/Qwen2.5-7B-Instruct")
    assert f.rule == "models.hub_download" and command in f.message
    assert shlex.split(command)[:3] == ["hf", "download", "Qwen/Qwen2.5-7B-Instruct"]
    assert shlex.split(command)[3:] == ["--local-dir", folder] and folder.endswith("/models/Qwen2.5-7B-Instruct")
    assert load_model_facts("meta-llama/Llama-3.1-8B-Instruct").facts.gated is True


def test_hub_id_outside_the_catalogue_suggests_near_ids():
    # a digit apart is another model (a size, a version): a note with the near ids
    lookup = load_model_facts("Qwen/Qwen2.5-8B-Instruct")
    assert lookup.facts is None
    (note,) = [f for f in lookup.findings if f.rule == "models.not_in_catalogue"]
    assert "did you mean Qwen/Qwen2.5-7B-Instruct" in note.message and note.severity.value == "info"
    far = load_model_facts("someorg/some-model")
    assert "did you mean" not in [f for f in far.findings if f.rule == "models.not_in_catalogue"][0].message


def test_load_models_for_the_roles_a_config_loads(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # where the download command puts the model
    actor = write_tiny_model(tmp_path / "actor", config=HEADS14, shards=1)
    values = {"actor_rollout_ref.model.path": str(actor), "critic.model.path": str(tmp_path / "missing"),
              "algorithm.adv_estimator": "gae", "actor_rollout_ref.actor.use_kl_loss": True,
              "reward.reward_model.enable": True, "reward.reward_model.model_path": "Qwen/Qwen2.5-1.5B-Instruct"}
    cache: dict = {}
    lookups = load_models_for(values, cache)
    assert set(lookups) == {"actor", "ref", "critic", "reward"}
    assert lookups["ref"].facts == lookups["actor"].facts  # verl builds the reference from the actor's path
    (missing,) = lookups["critic"].findings
    assert missing.keys == ["critic.model.path"] and missing.message.startswith("critic.model.path: ")
    (download,) = lookups["reward"].findings
    # the folder to point at once downloaded, offered to apply only once it is there (applied before, the plan
    # would point at nothing and lose the model's facts)
    folder = download_command("Qwen/Qwen2.5-1.5B-Instruct")[1]
    assert folder in download.fix and download.fix_overrides == []
    Path(folder).mkdir(parents=True)
    (later,) = load_models_for(values, {})["reward"].findings
    assert later.fix_overrides == [f"reward.reward_model.model_path={folder}"]
    assert len(cache) == 3  # actor and ref share one read
    again = load_models_for(values, cache)
    assert again["actor"].facts is lookups["actor"].facts  # read once, reused
    assert [f.rule for f in lookup_findings(lookups)] == ["models.path_missing", "models.hub_download"]


def test_verls_placeholder_path_is_left_to_its_own_rule():
    assert load_models_for({"actor_rollout_ref.model.path": "~/models/deepseek-llm-7b-chat"}) == {}


# -- the catalogue itself ------------------------------------------------------------------------

def test_every_catalogue_row_is_sourced_and_readable():
    catalogue = load_catalogue()
    assert len(catalogue.models) >= 35
    for name, row in catalogue.models.values():
        assert row["source"] and row["checked"] in (datetime.date(2026, 12, 2), datetime.date(2026, 12, 5)), name
        assert row.get("config") or row.get("same_as"), name
        assert isinstance(row["verified"], bool), name
        assert row.get("gated", False) == name.startswith(("meta-llama/", "google/")), name
        facts = catalogue.facts(name)
        assert facts.known_layout and facts.remote_code is False and facts.max_position_embeddings, name
    assert {"qwen2", "llama", "gemma3_text", "deepseek_v3"} <= catalogue.native_model_types


@pytest.mark.parametrize("hub_id, billions", [  # shared/reference/gpu-memory.md §4.3 and the model cards
    ("Qwen/Qwen2.5-0.5B-Instruct", 0.494), ("Qwen/Qwen2.5-1.5B-Instruct", 1.544), ("Qwen/Qwen2.5-3B-Instruct", 3.086),
    ("Qwen/Qwen2.5-7B-Instruct", 7.616), ("Qwen/Qwen2.5-14B-Instruct", 14.77), ("Qwen/Qwen2.5-32B", 32.76),
    ("Qwen/Qwen2.5-72B-Instruct", 72.71), ("deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B", 1.777),
    ("Qwen/Qwen3-0.6B", 0.596), ("Qwen/Qwen3-8B", 8.191), ("Qwen/Qwen3-32B", 32.76), ("Qwen/Qwen3-30B-A3B", 30.53),
    ("meta-llama/Llama-3.2-1B-Instruct", 1.236), ("meta-llama/Llama-3.1-8B-Instruct", 8.030),
    ("google/gemma-2-2b-it", 2.614), ("google/gemma-3-12b-it", 11.77),
    # the families issue 29 added (model cards: 3.75B, 8.29B, 14.8B, 46.7B, 3.82B, 14.7B, 27.2B)
    ("Qwen/Qwen2.5-VL-3B-Instruct", 3.755), ("Qwen/Qwen2.5-VL-7B-Instruct", 8.292),
    ("Qwen/Qwen2.5-Coder-14B-Instruct", 14.77), ("mistralai/Mixtral-8x7B-Instruct-v0.1", 46.70),
    ("microsoft/Phi-3.5-mini-instruct", 3.821), ("microsoft/phi-4", 14.66), ("google/gemma-2-27b-it", 27.23),
])
def test_catalogue_parameter_counts_match_the_reference(hub_id, billions):
    assert load_catalogue().facts(hub_id).param_count / 1e9 == pytest.approx(billions, abs=0.006)



def test_every_hub_command_a_fix_suggests_exists_in_the_target_environment():
    """The commands fixes name run in the environment verl runs in (here: this one, which has verl 0.9.1's
    huggingface_hub); `huggingface-cli` would print "deprecated and no longer works" there."""
    import os
    import subprocess
    import sys

    from tests.conftest import need_verl
    from wizard.core.models.facts import HF_COMMANDS

    need_verl()
    hf = os.path.join(os.path.dirname(sys.executable), "hf")
    for command in HF_COMMANDS:
        words = command.split()
        assert words[0] == "hf"
        proc = subprocess.run([hf, *words[1:], "--help"], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, f"{command}: {proc.stderr[-300:]}"


def test_a_same_as_row_takes_its_base_rows_shape_and_changes_only_what_it_lists():
    catalogue = load_catalogue()
    coder, base = catalogue.facts("Qwen/Qwen2.5-Coder-7B-Instruct"), catalogue.facts("Qwen/Qwen2.5-7B-Instruct")
    assert coder.param_count == base.param_count and coder.kv_bytes_per_token() == base.kv_bytes_per_token()
    assert coder.name == "Qwen/Qwen2.5-Coder-7B-Instruct" and coder.verified is False
    longer = catalogue.facts("Qwen/Qwen3-4B-Instruct-2507")
    assert longer.max_position_embeddings == 262144 and longer.param_count == catalogue.facts("Qwen/Qwen3-4B").param_count


def test_a_same_as_loop_or_a_missing_base_is_refused_with_its_reason():
    from wizard.adapters.files.model_facts import Catalogue
    rows = {"a/x-7b": ("a/X-7B", {"same_as": "a/Y-7B"}), "a/y-7b": ("a/Y-7B", {"same_as": "a/X-7B"}),
            "a/z-7b": ("a/Z-7B", {"same_as": "a/Nowhere-7B"})}
    cat = Catalogue(models=rows, native_model_types=frozenset())
    with pytest.raises(ModelConfigError, match="a loop"):
        cat.facts("a/X-7B")
    with pytest.raises(ModelConfigError, match="not in the catalogue"):
        cat.facts("a/Z-7B")


def test_an_unknown_size_in_a_known_family_suggests_the_nearest_sizes_first():
    from wizard.adapters.files.model_facts import load_model_facts

    [note] = [f for f in load_model_facts("Qwen/Qwen2.5-13B-Foo").findings if f.rule == "models.not_in_catalogue"]
    assert "did you mean Qwen/Qwen2.5-14B or " in note.message  # 14B, not 3B, which is spelled closer
    assert note.fix == "If you meant Qwen/Qwen2.5-14B, use that id"


@pytest.mark.parametrize("typo", ["Qwen/Qwen2.5-7B-Instuct", "Qwen/Qwen2.5-7B-Instrcut", "Qwen/Qwen2.5-7B-Instructt"])
def test_a_hub_id_a_letter_or_two_from_a_catalogue_id_is_a_warning_and_no_download_is_offered(typo):
    """Qwen/Qwen2.5-7B-Instrcut was a note (exit 0, 'OK') whose fix was `hf download Qwen/Qwen2.5-7B-Instrcut`."""
    lookup = load_model_facts(typo)
    assert [f.rule for f in lookup.findings] == ["models.hub_typo"]
    (warn,) = lookup.findings
    assert warn.severity.value == "warning" and "spelled almost like Qwen/Qwen2.5-7B-Instruct" in warn.message
    assert warn.fix == "If you meant Qwen/Qwen2.5-7B-Instruct, use that id" and "hf download" not in warn.message
