"""Models, continued: what verl needs to load each model (tokenizer, weights, code, access) and
which differences between the actor and the critic matter.

Like ``wizard.core.check.rules.models`` these read ``ctx.models`` and stay silent without facts. The
facts about files (tokenizer, weights, chat template) exist for local folders only; for a hub id
they are unknown (None) and nothing is said.
"""

from __future__ import annotations

import re

from wizard.core.findings import Severity, Stage
from wizard.core.check.rules import rule
from wizard.core.check.rules.context import RuleContext, finding
from wizard.core.check.rules.models import PATH_KEYS, TOKENIZER_KEYS, TRUST_KEYS, roles_with_facts
from wizard.core.models.facts import HF_LOGIN, ModelFacts

LOADED = ("actor", "critic", "reward")  # the reference model is the actor's path: reported once, as the actor


@rule("models.tokenizer_missing", Stage.STARTUP)
def tokenizer_missing(ctx: RuleContext):
    """HFModelConfig loads the tokenizer from tokenizer_path (default: the model path) in the TaskRunner."""
    for role, facts in roles_with_facts(ctx, *LOADED):
        tok_key = TOKENIZER_KEYS.get(role)
        if facts.has_tokenizer is not False or (tok_key and ctx.get(tok_key)):
            continue
        yield finding(
            Severity.ERROR, [PATH_KEYS[role]] + ([tok_key] if tok_key else []),
            f"{facts.name} has no tokenizer (no tokenizer.json, tokenizer.model, or vocab.json + merges.txt); verl "
            f"loads the {role}'s tokenizer from there and stops before training with transformers' \"Can't load "
            "tokenizer\" error",
            "Copy the base model's tokenizer files into the folder"
            + (f", or set {tok_key}=<a folder with the tokenizer>" if tok_key else ""),
            fix_auto=False,
        )


@rule("models.chat_template", None)  # startup or run time: see below
def chat_template(ctx: RuleContext):
    """RLHFDataset and the agent loop apply the actor tokenizer's chat template to every prompt."""
    facts = ctx.models.get("actor")
    if facts is None or facts.has_chat_template is not False or facts.has_tokenizer is False:
        return
    if ctx.get("actor_rollout_ref.model.custom_chat_template") or ctx.get("actor_rollout_ref.model.tokenizer_path"):
        return
    early = bool(ctx.get("data.filter_overlong_prompts"))
    yield finding(
        Severity.ERROR, [PATH_KEYS["actor"], "actor_rollout_ref.model.custom_chat_template"],
        f"{facts.name}'s tokenizer has no chat template (none in tokenizer_config.json, no chat_template.jinja); verl "
        "applies it to every prompt and stops "
        + ("while filtering the dataset" if early else "at the first rollout")
        + " with: Cannot use chat template functions because tokenizer.chat_template is not set",
        "Use the -Instruct variant, or give a template with actor_rollout_ref.model.custom_chat_template",
        fix_auto=False, stage=Stage.STARTUP if early else Stage.RUNTIME,
    )


@rule("models.weights_missing", Stage.STARTUP)
def weights_missing(ctx: RuleContext):
    """The FSDP engine (and the rollout server) load the weights with from_pretrained at worker start."""
    for role, facts in roles_with_facts(ctx, *LOADED):
        if facts.has_weights is False:
            yield finding(
                Severity.ERROR, [PATH_KEYS[role]],
                f"{facts.name} has no weights (no *.safetensors or pytorch_model*.bin): the {role} workers fail in "
                "from_pretrained after Ray has started them",
                "Point the key at a complete model folder (config, tokenizer and weights)", fix_auto=False,
            )


@rule("models.remote_code", Stage.STARTUP)
def remote_code(ctx: RuleContext):
    """transformers runs a repo's own code only with trust_remote_code=True; else AutoConfig raises.

    The reward model has no such key: verl builds its HFModelConfig with trust_remote_code=False
    (experimental/reward_loop/reward_model.py).
    """
    for role, facts in roles_with_facts(ctx, *LOADED):
        key = TRUST_KEYS.get(role)
        if facts.remote_code is False or (key and ctx.get(key) is True):
            continue
        if facts.remote_code is None:
            if not facts.auto_map:
                continue
            yield finding(
                Severity.WARNING, [PATH_KEYS[role]] + ([key] if key else []),
                f"{facts.name}'s config.json names its own code (auto_map) for model_type {facts.model_type!r}, which "
                "the wizard does not know transformers to implement; if it does not, loading stops with: "
                "Please pass the argument `trust_remote_code=True`",
                f"Set {key}=True if you trust the repo's code" if key else "Use a reward model transformers implements",
                [f"{key}=True"] if key else [], fix_auto=False,
            )
            continue
        yield finding(
            Severity.ERROR, [PATH_KEYS[role]] + ([key] if key else []),
            f"{facts.name} needs its own code (config.json auto_map, model_type {facts.model_type!r} is not built into "
            f"transformers) but " + (f"{key} is not True" if key else "verl loads reward models without it")
            + ": the TaskRunner stops with: contains custom code which must be executed to correctly load the model"
            " ... Please pass the argument `trust_remote_code=True`",
            f"Set {key}=True (it runs the repo's Python code)" if key
            else "Use a reward model whose architecture transformers implements",
            [f"{key}=True"] if key else [], fix_auto=False,
        )


@rule("models.gated", Stage.STARTUP)
def gated(ctx: RuleContext):
    """Gated hub repos (Meta Llama, Google Gemma) answer 401/403 without an accepted licence and a token."""
    seen = set()
    for role, facts in roles_with_facts(ctx, *LOADED):
        if not facts.gated or facts.name in seen:
            continue
        seen.add(facts.name)
        yield finding(
            Severity.INFO, [PATH_KEYS[role]],
            f"{facts.name} is a gated repo: accept its licence on its hub page with your account, then run "
            f"`{HF_LOGIN}` (or export HF_TOKEN) on every node; otherwise the download fails with 401/403 "
            "when the workers start. The wizard never writes tokens into the files it generates",
            "Log in on each node before launching, or download the model once and point the key at the folder",
            fix_auto=False,
        )


_FAMILY = re.compile(r"^[a-z]+")


def _family(model_type: str | None) -> str | None:
    match = _FAMILY.match(model_type or "")
    return match.group(0) if match else None


# Families whose chat template puts a token with a high id into every prompt: (vocab_size range of the tokenizer
# it holds for, the token, its id). Qwen's <|im_start|> (Qwen1.5 to Qwen3, VL and MoE alike); Llama 3's bos, which
# its template writes first (Llama 3.x and the R1 distills on it; Llama 2 has 32,000 rows and is not covered).
PROMPT_TOKENS: dict[str, tuple[tuple[int, int], str, int]] = {
    "qwen": ((151_646, 152_064), "<|im_start|>", 151_644),
    "llama": ((128_256, 128_256), "<|begin_of_text|>", 128_000),
}


def _prompt_token(facts: ModelFacts) -> tuple[str, int] | None:
    """A token every chat prompt of this model holds, with its id, where the wizard knows one."""
    known = PROMPT_TOKENS.get(_family(facts.model_type) or "")
    if known is None or not known[0][0] <= facts.vocab_size <= known[0][1]:
        return None
    return known[1], known[2]


@rule("models.critic_vocab", Stage.RUNTIME)
def critic_vocab(ctx: RuleContext):
    """The critic may be any size, but it reads the actor's token ids (the rollout's input_ids, tokenized by
    the actor's tokenizer): they must mean the same tokens and fit its embedding. verl 0.9.1 neither re-tokenizes
    for the critic nor resizes its embedding: the V1 trainer hands the rollout batch to critic_wg.infer_batch
    (trainer/ppo/v1/trainer_base.py:1721-1730), the FSDP value engine feeds micro_batch["input_ids"] to the model
    (workers/engine/fsdp/transformer_impl.py:1169-1191), loaded by from_pretrained in load_valuehead_model
    (utils/model.py:641-682); the critic's own tokenizer is loaded (workers/config/model.py:153-161) but not used on
    them. (The reward model decodes and re-tokenizes text with its own tokenizer, so it may differ.)"""
    actor, critic = ctx.models.get("actor"), ctx.models.get("critic")
    if actor is None or critic is None or not ctx.need_critic:
        return
    keys = [PATH_KEYS["actor"], PATH_KEYS["critic"]]
    token = _prompt_token(actor)
    if token is not None and token[1] >= critic.vocab_size:
        name, token_id = token
        actor_path = ctx.get(PATH_KEYS["actor"])
        actor_path = actor_path if isinstance(actor_path, str) else None
        yield finding(
            Severity.ERROR, keys,
            f"the actor's tokenizer ({actor.name}, {actor.model_type}) writes {name} (id {token_id:,}) into every "
            f"prompt, but the critic {critic.name} ({critic.model_type}) has an embedding of {critic.vocab_size:,} rows "
            f"(ids 0 to {critic.vocab_size - 1:,}); verl feeds the critic the actor's token ids as they are (no "
            "re-tokenizing, no resized embedding), so its first forward (compute_values, after the first rollout) "
            "indexes past its embedding and the critic workers die with: RuntimeError: CUDA error: device-side assert "
            "triggered (srcIndex < srcSelectDimSize; on a CPU: IndexError: index out of range in self)",
            "Use a critic that shares the actor's tokenizer, usually the actor's own model: critic.model.path="
            + (actor_path or "<the actor's path>"),
            [f"critic.model.path={actor_path}"] if actor_path else [], fix_auto=False,
        )
        return
    a_family, c_family = _family(actor.model_type), _family(critic.model_type)
    if a_family and c_family and a_family != c_family:
        smaller = (f"; and any id at or above {critic.vocab_size} makes its first forward fail with a CUDA "
                   "device-side assert" if critic.vocab_size < actor.vocab_size else "")
        yield finding(
            Severity.WARNING, keys,
            f"the actor is a {actor.model_type} model ({actor.vocab_size} tokens) and the critic a "
            f"{critic.model_type} model ({critic.vocab_size}): their tokenizers differ, but the critic is fed the "
            "actor's token ids and reads them as other tokens (verl does not check this), so its values are noise"
            + smaller,
            "Use a critic from the actor's family (usually the actor's model: critic.model.path = the actor's path)",
            fix_auto=False,
        )
    elif critic.vocab_size < actor.vocab_size:
        yield finding(
            Severity.WARNING, keys,
            f"the critic {critic.name} has a {critic.vocab_size}-row embedding but the actor {actor.name} has "
            f"{actor.vocab_size}: the critic is fed the actor's token ids, and an id at or above {critic.vocab_size} "
            "makes its first forward fail with a CUDA device-side assert; this is safe only if the actor's tokenizer has "
            f"fewer than {critic.vocab_size} tokens (sizes of one family are often padded differently)",
            "Use a critic from the actor's family with at least the actor's vocab_size (usually the actor's model)",
            fix_auto=False,
        )


@rule("models.unknown_architecture", Stage.STARTUP)
def unknown_architecture(ctx: RuleContext):
    """The wizard knows the layout of the families in wizard.core.models.facts.KNOWN_MODEL_TYPES."""
    for role, facts in roles_with_facts(ctx, *LOADED):
        if facts.known_layout:
            continue
        yield finding(
            Severity.INFO, [PATH_KEYS[role]],
            f"{facts.name}: {facts.architecture or 'an unnamed architecture'} (model_type {facts.model_type!r}) is not "
            "a family the wizard knows the layout of; its parameter count and memory use the generic decoder "
            "formula (attention + gated MLP) and are estimates. Check that your transformers and vLLM support it",
            None, fix_auto=False,
        )
