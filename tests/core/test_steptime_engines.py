"""The rollout engine's limits in the step time. SGLang as the rollout engine gets a step time (and so a ranked advice)
like vLLM: the trainer's phases are the same FSDP ones; its generation runs at its own measured decode rate, under
its own limits (max_running_requests, decode CUDA graphs only up to cuda_graph_max_bs), and the plan says what of it
was not measured (flashinfer attention)."""

from tests.core.test_advice import A, Q15, R, plan
from wizard.core.memory.sglang import sglang_gpu_defaults
from wizard.usecases.advising import step_time

SGL = [f"{R}.name=sglang", "data.max_response_length=512", "data.max_prompt_length=512"]


def gen(st):
    return next(p for p in st.phases if p.name == "gen")


def decode(st):
    return next(t for t in gen(st).terms if t.label == "decode")


def test_an_sglang_plan_has_a_step_time_with_its_assumption_said():
    st = step_time(plan([*SGL, "data.train_batch_size=16"], "1xH100-80GB", Q15))
    assert st.reason is None and st.seconds > 0
    assert {p.name for p in st.phases} >= {"gen", "old_log_prob", "update_actor", "update_weights"}
    assert any("SGLang" in a and "not measured" in a for a in st.assumptions)
    # verl sleeps the engine inside its gen timer: SGLang's release of weights and KV cache (1.3-1.6 s measured on an
    # H100) is a term of the generation; vLLM's (0.1 s) is not
    sleep = [t for t in gen(st).terms if t.label == "engine sleep"]
    assert len(sleep) == 1 and 1.0 <= sleep[0].seconds <= 2.0
    vllm = step_time(plan(["data.max_response_length=512", "data.max_prompt_length=512", "data.train_batch_size=16"],
                          "1xH100-80GB", Q15))
    assert not any("SGLang" in a for a in vllm.assumptions)
    assert not any(t.label == "engine sleep" for t in gen(vllm).terms)
    # the trainer's phases do not depend on the engine
    assert st.by_name()["update_actor"] == vllm.by_name()["update_actor"]


def test_above_cuda_graph_max_bs_sglang_decodes_without_graphs():
    # 256 prompts x 4 = 1,024 requests on one H100, all at once (max_num_seqs 1024, a KV pool of 1.5k sequences):
    # above SGLang's default cuda_graph_max_bs (256 on an 80 GB GPU)
    assert sglang_gpu_defaults(80 * 2**30, 1) == (8192, 256)
    big = [*SGL, "data.train_batch_size=256", "actor_rollout_ref.actor.ppo_mini_batch_size=64",
           f"{R}.gpu_memory_utilization=0.7", f"{R}.max_num_seqs=1024"]
    st = step_time(plan(big, "1xH100-80GB", Q15))
    assert "> cuda_graph_max_bs 256" in decode(st).note
    # raising it (engine_kwargs.sglang.cuda_graph_max_bs) keeps the graphs and is faster per decode step
    raised = step_time(plan([*big, f"+{R}.engine_kwargs.sglang.cuda_graph_max_bs=1024"], "1xH100-80GB", Q15))
    assert "with CUDA graphs" in decode(raised).note
    assert decode(raised).seconds < decode(st).seconds
    # verl's enforce_eager turns SGLang's graphs off whatever the batch
    small = step_time(plan([*SGL, "data.train_batch_size=16", f"{R}.enforce_eager=true"], "1xH100-80GB", Q15))
    assert "with CUDA graphs" not in decode(small).note


def test_max_num_seqs_caps_sglang_requests_at_once():
    # max_num_seqs is SGLang's max_running_requests: 16 at once out of 64 requests makes four rounds of decoding
    st = step_time(plan([*SGL, "data.train_batch_size=16", f"{R}.max_num_seqs=16"], "1xH100-80GB", Q15))
    assert decode(st).note.startswith("4 round(s)")
    free = step_time(plan([*SGL, "data.train_batch_size=16"], "1xH100-80GB", Q15))
    assert decode(free).note.startswith("1 round(s)") and gen(st).seconds > gen(free).seconds


VLLM_BIG = ["data.train_batch_size=256", "actor_rollout_ref.actor.ppo_mini_batch_size=64",
            f"{R}.gpu_memory_utilization=0.7"]


def test_vllm_decodes_without_graphs_above_its_largest_captured_batch():
    # verl's max_num_seqs 256: 256 of the 1,024 requests at once, four rounds, within vLLM's graphs (up to 512)
    st = step_time(plan(VLLM_BIG, "1xH100-80GB", Q15))
    assert "with CUDA graphs" in decode(st).note and "max_num_seqs lets 256 of the 1024" in decode(st).note
    # max_num_seqs 1024: one round, but 1,024 at once is above min(2 x 1024, 512) = 512: no graphs for that batch
    wide = step_time(plan([*VLLM_BIG, f"{R}.max_num_seqs=1024"], "1xH100-80GB", Q15))
    assert "1024 sequences at once > vLLM's largest captured batch 512" in decode(wide).note
    # capture sizes that reach the batch keep the graphs: the same round, a shorter decode step
    listed = step_time(plan([*VLLM_BIG, f"{R}.max_num_seqs=1024", f"{R}.cudagraph_capture_sizes=[1,2,4,8,1024]"],
                            "1xH100-80GB", Q15))
    assert "with CUDA graphs" in decode(listed).note and decode(listed).seconds < decode(wide).seconds


def test_an_moe_model_is_timed_by_the_experts_a_token_passes_through():
    from wizard.adapters.files.model_facts import load_catalogue

    moe = load_catalogue().facts("Qwen/Qwen3-30B-A3B")  # 30.5B params, 3.3B active (8 of 128 experts)
    assert moe.param_count > 8 * moe.active_param_count
    eight = ["trainer.n_gpus_per_node=8", f"{R}.tensor_model_parallel_size=2", "data.train_batch_size=64",
             f"{R}.gpu_memory_utilization=0.8",
             "actor_rollout_ref.actor.ppo_mini_batch_size=16", "actor_rollout_ref.actor.strategy=fsdp2",
             "actor_rollout_ref.ref.strategy=fsdp2"]
    st = step_time(plan(eight, "8xH100-80GB", moe))
    flops = next(t for p in st.phases if p.name == "update_actor" for t in p.terms if t.label == "FLOPs")
    assert f"{moe.active_param_count / 1e9:.2f}B active params" in flops.note
    # a decode step reads the routed experts its batch picks: nearly all of them at 256 sequences, few at one
    one = step_time(plan([*eight, "data.train_batch_size=1", f"{R}.n=1", "actor_rollout_ref.actor.ppo_mini_batch_size=1"],
                         "8xH100-80GB", moe))
    weights = [float(decode(x).note.split("weights ")[1].split(" GB")[0]) for x in (one, st)]
    assert weights[0] < weights[1] / 3 and weights[1] >= 2 * moe.param_count / 2 / 1e9 * 0.95


def test_no_response_per_prompt_gets_no_step_time_but_the_reason():
    # read_config counts rollout.n=0 as one response; the step would time a step that has nothing to train on
    st = step_time(plan(["data.train_batch_size=16", f"{R}.n=0"], "1xH100-80GB", Q15))
    assert st.seconds is None and st.reason == "rollout.n=0 samples no response: the step has nothing to train on"


def test_standalone_rollout_replicas_generate_on_their_own_gpus_and_the_sum_is_said_to_be_an_upper_bound():
    from tests.core.test_advice import SEPARATE

    def timed(rollout_gpus):
        st = step_time(plan([*SEPARATE, f"{R}.n_gpus_per_node={rollout_gpus}"], "2x8xH100-80GB", Q15))
        assert st.reason is None
        return st

    eight, four = timed(8), timed(4)
    # 4 replicas of TP 2 on 8 GPUs, 2 on 4: each gets twice the sequences (the trainer's 8 GPUs do not generate)
    assert decode(four).seconds > 1.1 * decode(eight).seconds  # (the phase itself ends at verl's 2-s poll)
    assert [p.seconds for p in eight.phases if p.name != "gen"] == [p.seconds for p in four.phases if p.name != "gen"]
    assert any("separate_async" in a and "upper bound" in a for a in eight.assumptions)


def test_the_offload_policy_pays_its_host_copies_every_micro_batch_not_once_a_step():
    # FSDP2's CPU offload policy gathers from the host's fp32 shards at each forward and backward, and sends each
    # micro-batch's grads back: charged once an optimizer step, it ranked first where it is slowest (70B LoRA,
    # 640 micro-batches)
    from tests.core.test_advice import AF

    def update(micro):
        st = step_time(plan([f"{A}.strategy=fsdp2", "actor_rollout_ref.ref.strategy=fsdp2", f"{AF}.offload_policy=True",
                             f"{A}.ppo_micro_batch_size_per_gpu={micro}", "data.train_batch_size=16"], "1xH100-80GB", Q15))
        phase = next(p for p in st.phases if p.name == "update_actor")
        return next(t for t in phase.terms if t.label.startswith("offload policy"))

    two, eight = update(2), update(8)  # 32 and 8 micro-batches of 64 sequences
    assert abs(two.seconds / eight.seconds - 4) < 0.01
    # per micro-batch: the fp32 shard twice to the GPU, the grads once back (1.54B x 4 bytes x 3)
    assert abs(eight.seconds - 8 * 3 * 4 * Q15.param_count / 25e9) / eight.seconds < 0.01


def test_a_token_budget_below_a_sample_at_the_assumed_lengths_gets_no_step_time():
    # dynamic batching takes whole sequences: a budget of 1,000 with 1,024-token samples was timed as 984 micro-batches
    st = step_time(plan(["data.train_batch_size=16", f"{A}.use_dynamic_bsz=True", f"{A}.ppo_max_token_len_per_gpu=1000"],
                        "1xH100-80GB", Q15))
    assert st.seconds is None and "ppo_max_token_len_per_gpu=1000 tokens is less than a sample" in st.reason
    assert step_time(plan(["data.train_batch_size=16", f"{A}.use_dynamic_bsz=True",
                           f"{A}.ppo_max_token_len_per_gpu=1024"], "1xH100-80GB", Q15)).seconds > 0


def test_the_reference_s_budget_and_sizes_below_one_prompt_get_no_step_time_either():
    ref = step_time(plan(["data.train_batch_size=16", f"{A}.use_dynamic_bsz=True", f"{A}.ppo_max_token_len_per_gpu=4096",
                          "actor_rollout_ref.ref.log_prob_max_token_len_per_gpu=1000"], "1xH100-80GB", Q15))
    assert ref.seconds is None and "ref.log_prob_max_token_len_per_gpu=1000" in ref.reason
    for size in ("data.train_batch_size=0", f"{A}.ppo_mini_batch_size=-8"):
        st = step_time(plan([size], "1xH100-80GB", Q15))
        assert st.seconds is None and "must be 1 or more" in st.reason, size


def test_a_rollout_engine_that_does_not_start_gets_no_step_time_but_the_reason():
    # a 7B on one 24 GB GPU: vLLM has no room for one request's KV cache and stops at its start; the step was timed
    # as one sequence at a time (823 s)
    st = step_time(plan([], "1xRTX-4090-24GB"))
    assert st.seconds is None and "no room for one request's KV cache" in st.reason and "GiB short" in st.reason
    # a fraction vLLM refuses: no memory estimate, and no step time (9.2 s was printed under "verdict: none")
    st = step_time(plan([f"{R}.gpu_memory_utilization=1.5"], "1xH100-80GB", Q15))
    assert st.seconds is None and "does not start with actor_rollout_ref.rollout.gpu_memory_utilization" in st.reason
    assert step_time(plan([], "1xH100-80GB", Q15)).seconds > 0
