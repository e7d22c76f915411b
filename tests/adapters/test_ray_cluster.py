"""Ray discovery against a real local Ray cluster: two raylets on loopback, inside a private network
namespace (``unshare -n``; also its own PID and mount namespaces, so ``ray stop --force`` and /tmp/ray
touch only this cluster, and the kernel ends every process of it when the namespace's shell exits)."""

import json
import socket
import subprocess
import sys
import textwrap

import pytest

from wizard.adapters.verl_env.ray_cluster import RayAddressError, discover_ray, parse_address

from tests.helpers.netns import LOOPBACK_RAY, UNSHARE, namespaces_work as _namespaces_work


def _closed_loopback_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("address", ["nohost", "127.0.0.1:", "127.0.0.1:99999", ":6379"])
def test_unreadable_addresses_are_refused_before_anything_is_sent(address):
    with pytest.raises(RayAddressError, match="use HOST:PORT"):
        parse_address(address)
    assert parse_address("auto") is None and parse_address("127.0.0.1:6379") == ("127.0.0.1", 6379)


def test_nothing_listening_answers_at_once_with_a_fix():
    port = _closed_loopback_port()
    d = discover_ray(f"127.0.0.1:{port}", timeout=600)
    (f,) = d.findings
    # the refusal itself is the answer (no probe started, no waiting out the timeout)
    assert "Connection refused" in f.message and "within" not in f.message
    assert not d.ok and f.rule == "ray.unreachable" and f"127.0.0.1:{port}" in f.message
    assert "ray start --head" in f.fix and "--block" in f.fix and d.cluster.nodes == []


DRIVER = textwrap.dedent("""
    import json, os, subprocess, sys, time
    from wizard.adapters.verl_env.ray_cluster import discover_ray
    ray = os.path.join(os.path.dirname(sys.executable), "ray")
    # a dead raylet is noticed within seconds, not the default ~30 s
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="disabled", RAY_health_check_period_ms="500",
               RAY_health_check_failure_threshold="3", RAY_health_check_timeout_ms="1000")
    env.pop("RAY_ADDRESS", None)
    def show(tag, d):
        print(json.dumps({"tag": tag, **d.to_json()}), flush=True)
    subprocess.run([ray, "start", "--head", "--node-ip-address=127.0.0.1", "--port=6380", "--num-cpus=2",
                    "--num-gpus=2", "--include-dashboard=false", "--disable-usage-stats"],
                   env=env, check=True, capture_output=True, timeout=90)
    worker = subprocess.Popen([ray, "start", "--address=127.0.0.1:6380", "--node-ip-address=127.0.0.1",
                               "--num-cpus=1", "--num-gpus=1", "--disable-usage-stats", "--block"],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(60):  # until the second raylet has registered
            d = discover_ray("127.0.0.1:6380", timeout=60)
            if len([n for n in d.cluster.nodes if n.alive]) == 2:
                break
            time.sleep(1)
        show("two", d)
        worker.terminate()
        worker.wait(timeout=60)
        for _ in range(60):  # until the head has noticed
            d = discover_ray("127.0.0.1:6380", timeout=60)
            if any(not n.alive for n in d.cluster.nodes):
                break
            time.sleep(1)
        show("one_dead", d)
    finally:
        if worker.poll() is None:
            worker.kill()
        subprocess.run([ray, "stop", "--force"], env=env, capture_output=True, timeout=60)
""")


@pytest.mark.ray
def test_a_real_two_raylet_cluster_on_loopback(tmp_path):
    why = _namespaces_work()
    if why:
        pytest.skip(f"{why}; the Ray cluster test never runs outside a loopback-only namespace")
    script = tmp_path / "ray_driver.py"
    script.write_text(DRIVER)
    import os

    # RAY_AUTH_MODE=disabled: Ray 2.60 turns token auth on when ~/.ray/auth_token exists (any earlier local
    # Ray run writes it), and this throwaway loopback cluster must not depend on what the machine has seen
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="disabled", PYTHONPATH=os.getcwd())
    env.pop("RAY_ADDRESS", None)
    shell = f"{LOOPBACK_RAY} && exec {sys.executable} {script}"
    proc = subprocess.run([*UNSHARE, "bash", "-c", shell], capture_output=True, text=True, timeout=300, env=env)
    docs = {d["tag"]: d for d in (json.loads(x) for x in proc.stdout.splitlines() if x.startswith("{"))}
    assert proc.returncode == 0 and set(docs) == {"two", "one_dead"}, proc.stderr[-2000:]

    two = docs["two"]["cluster"]
    assert two["source"] == "ray" and two["ray_version"]
    alive = [n for n in two["nodes"] if n["alive"]]
    assert sorted(n["gpu_count"] for n in alive) == [1, 2] and sorted(n["cpus"] for n in alive) == [1.0, 2.0]
    assert all(n["address"] == "127.0.0.1" for n in alive)
    # host RAM, which memory.host judges: Ray's memory resource and its object store together, the RAM free when
    # each raylet started (Ray's "memory" alone is 70 % of it)
    from wizard.adapters.machine.nvml import host_memory_bytes
    assert all(0.3 * host_memory_bytes() < n["memory_bytes"] <= host_memory_bytes() for n in alive)
    assert len({n["name"] for n in alive}) == 2  # two raylets on one host are told apart
    uneven = [f for f in docs["two"]["findings"] if f["rule"] == "ray.uneven_nodes"]
    assert uneven and uneven[0]["fix"] == "trainer.n_gpus_per_node=1"

    after = docs["one_dead"]
    dead = [n for n in after["cluster"]["nodes"] if not n["alive"]]
    assert len(dead) == 1 and dead[0]["gpu_count"] == 0
    assert [f["rule"] for f in after["findings"]] == ["ray.node_dead"]
    assert "Ray offers 2 GPUs" in after["findings"][0]["message"]
