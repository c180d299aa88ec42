"""The fingerprint: same setup, same hash; any relevant change, another; no secrets."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from envguard.commands.check import check
from envguard.probes.target import Target
from envguard.setup import fingerprint, observed_setup
from tests.conftest import PROFILES, TUNED, StandIn

DEMO = PROFILES / "demo.toml"


def setup_of(pid: int, profile: Path = DEMO) -> dict[str, object]:
    return observed_setup(check(profile, Target(pid=pid), read_launch=True))


def test_same_setup_same_fingerprint_across_processes(fake_sglang: Callable[..., StandIn]) -> None:
    one = fake_sglang("--model-path", "m", "--tp", "2", "--port", "30001", env={"HF_TOKEN": "a"})
    two = fake_sglang(
        "--model-path", "m", "--tp-size", "2", "--port", "30002", env={"HF_TOKEN": "b"}
    )
    first, second = setup_of(one.pid), setup_of(two.pid)
    assert first == second  # spelling, port and secrets are not the setup
    assert fingerprint(first) == fingerprint(second)
    assert first["env"] == {
        **dict(TUNED.items()),
        "NCCL_BUFFSIZE": 16777216,
        "NCCL_MAX_NCHANNELS": 16,
        "NCCL_NTHREADS": 512,
        "CUDA_DEVICE_MAX_CONNECTIONS": "8",
    }
    assert first["flags"] == {"model_path": "m", "tp_size": 2}
    assert first["server"] == {"kind": "sglang", "version": "0.5.23"}


def test_values_nccl_reads_alike_fingerprint_alike(fake_sglang: Callable[..., StandIn]) -> None:
    hex_buff = fake_sglang(
        "--model-path", "m", env={"NCCL_BUFFSIZE": "0x1000000", "NCCL_PROTO": "ll"}
    )
    dec_buff = fake_sglang("--model-path", "m")
    assert fingerprint(setup_of(hex_buff.pid)) == fingerprint(setup_of(dec_buff.pid))


def test_any_relevant_change_changes_it(fake_sglang: Callable[..., StandIn]) -> None:
    base = fingerprint(setup_of(fake_sglang("--model-path", "m").pid))
    tree = fake_sglang("--model-path", "m", env={"NCCL_ALGO": "Tree"})
    flag = fake_sglang("--model-path", "m", "--schedule-policy", "lpm")
    extra = fake_sglang(
        "--model-path", "m", env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}
    )
    fingerprints = {base, *(fingerprint(setup_of(s.pid)) for s in (tree, flag, extra))}
    assert len(fingerprints) == 4


def test_fingerprint_is_order_independent() -> None:
    a = {"env": {"A": "1", "B": "2"}, "flags": {"x": 1}}
    b = {"flags": {"x": 1}, "env": {"B": "2", "A": "1"}}
    assert fingerprint(a) == fingerprint(b)
    assert fingerprint(a).startswith("sha256:") and len(fingerprint(a)) == 71
