"""The fingerprint: same setup, same hash; any relevant change, another; no secrets."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from envguard.checking import check
from envguard.evaluation.results import setup_differences
from envguard.fingerprint import NOT_SETUP_FLAGS, fingerprint, observed_setup, setup_flags
from envguard.flags.catalog import Catalog, available, load
from envguard.flags.parsed import FlagValue, ParsedCommandLine
from envguard.knowledge.redaction import REDACTED, is_secret_option
from envguard.probes.target import Target
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


def _catalogs() -> list[Catalog]:
    return [load(server, v) for server in ("sglang", "vllm") for v in available(server)]


@pytest.mark.parametrize("catalog", _catalogs(), ids=lambda c: c.label)
def test_every_option_but_the_listen_address_is_in_the_setup(catalog: Catalog) -> None:
    """No option is left out of the fingerprint by its name: setups that differ in any
    non-secret option are refused by ledger compare; a secret counts by its presence only."""
    for option in catalog.options:
        if option.kind == "help" or option.dest in NOT_SETUP_FLAGS:
            continue
        setups = []
        for value in ("value-one", "value-two"):
            flag = FlagValue(option.dest, value, "--x", "cmdline", None)
            setups.append(setup_flags(ParsedCommandLine(catalog, {option.dest: flag})))
        assert option.dest in setups[0], option.dest
        differences = setup_differences({"flags": setups[0]}, {"flags": setups[1]}, [])
        if is_secret_option(option.dest):
            assert setups[0][option.dest] == REDACTED and not differences
        else:
            assert [d.name for d in differences] == [f"flags.{option.dest}"], option.dest
            assert fingerprint({"flags": setups[0]}) != fingerprint({"flags": setups[1]})


def test_servers_differing_in_token_budgets_have_different_fingerprints(
    fake_sglang: Callable[..., StandIn],
) -> None:
    """The options a substring rule hid (`TOKEN`) are setup like any other."""
    base = setup_of(fake_sglang("--model-path", "m", "--max-total-tokens", "4096").pid)
    other = setup_of(
        fake_sglang(
            "--model-path", "m", "--max-total-tokens", "8192",
            "--speculative-num-draft-tokens", "4", "--tokenizer-path", "t",
        ).pid
    )  # fmt: skip
    assert base["flags"] == {"model_path": "m", "max_total_tokens": 4096}
    names = [d.name for d in setup_differences(base, other, [])]
    assert names == [
        "flags.max_total_tokens",
        "flags.speculative_num_draft_tokens",
        "flags.tokenizer_path",
    ]
    assert fingerprint(base) != fingerprint(other)


def test_a_secret_in_the_tuning_namespace_counts_by_presence(
    fake_sglang: Callable[..., StandIn],
) -> None:
    one = setup_of(fake_sglang("--model-path", "m", env={"SGLANG_API_KEY": "one-key"}).pid)
    two = setup_of(fake_sglang("--model-path", "m", env={"SGLANG_API_KEY": "two-key"}).pid)
    url = setup_of(
        fake_sglang("--model-path", "m", env={"SGLANG_ENDPOINT": "https://u:pw@h/x"}).pid
    )
    assert one["env"]["SGLANG_API_KEY"] == REDACTED  # type: ignore[index]
    assert fingerprint(one) == fingerprint(two)
    assert url["env"]["SGLANG_ENDPOINT"] == f"https://{REDACTED}@h/x"  # type: ignore[index]
