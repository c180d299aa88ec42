"""Comparing records: what may be compared, metric deltas, the setup diff."""

from __future__ import annotations

import dataclasses

from envguard.evaluation.results import MISSING, MetricDelta, SetupDifference, compare
from tests.ledger.builders import record, varied


def test_same_setup_compares_with_deltas() -> None:
    baseline = dataclasses.replace(record(metrics={"tok_s": 88.8, "ttft_ms": 40.0}), id=1)
    eagle = dataclasses.replace(record(metrics={"tok_s": 94.0, "accept_len": 2.1}), id=2)
    result = compare(baseline, eagle)
    assert result.comparable and result.differences == []
    assert result.metrics == [
        MetricDelta("tok_s", 88.8, 94.0),
        MetricDelta("ttft_ms", 40.0, None),
        MetricDelta("accept_len", None, 2.1),
    ]
    assert round(result.metrics[0].delta or 0, 6) == 5.2
    assert round(result.metrics[0].percent or 0, 2) == 5.86


def test_the_seed_story_comparison_is_refused() -> None:
    """75.9 tok/s 'beat' a 62.9 baseline taken without the NCCL tuning."""
    untuned = {
        "env": {},
        "flags": {"tp_size": 8},
        "server": {"kind": "sglang", "version": "0.5.23"},
    }
    baseline = dataclasses.replace(record(metrics={"tok_s": 62.9}, setup=untuned), id=1)
    speculative = dataclasses.replace(
        record(
            metrics={"tok_s": 75.9}, setup=varied(flags={"speculative_algorithm": "EAGLE3"}, env={})
        ),
        id=2,
    )
    result = compare(baseline, speculative, ["speculative-algorithm"])
    assert not result.comparable
    assert result.refusals == [
        "the setups differ in env.NCCL_ALGO, env.NCCL_BUFFSIZE, env.NCCL_PROTO, "
        "flags.mem_fraction_static, which --vary does not name: the difference in results "
        "could come from any of them"
    ]
    assert (
        SetupDifference(("flags", "speculative_algorithm"), MISSING, "EAGLE3", True)
        in result.differences
    )


def test_the_varied_setting_is_allowed_by_any_spelling() -> None:
    a = dataclasses.replace(record(), id=1)
    b = dataclasses.replace(
        record(setup=varied(env={"NCCL_ALGO": "Tree"}, flags={"tp_size": 4})), id=2
    )
    assert not compare(a, b, ["NCCL_ALGO"]).comparable
    result = compare(a, b, ["NCCL_ALGO", "--tp-size"])
    assert result.comparable
    assert [(d.name, d.before, d.after, d.varied) for d in result.differences] == [
        ("env.NCCL_ALGO", "Ring", "Tree", True),
        ("flags.tp_size", 8, 4, True),
    ]


def test_invalid_records_are_never_compared() -> None:
    valid = dataclasses.replace(record(), id=1)
    refused = dataclasses.replace(
        record(verdict="refused", reasons=("server restarted during the run",)), id=2
    )
    result = compare(valid, refused)
    assert result.refusals == ["#2 (B) is not a valid result: server restarted during the run"]


def test_a_structured_flag_is_diffed_down_to_the_key() -> None:
    spec = {"method": "eagle3", "num_speculative_tokens": 3, "model": "yuhuili/EAGLE3"}
    a = dataclasses.replace(record(setup=varied(flags={"speculative_config": spec})), id=1)
    b = dataclasses.replace(
        record(setup=varied(flags={"speculative_config": {**spec, "num_speculative_tokens": 5}})),
        id=2,
    )
    result = compare(a, b, ["speculative-config"])
    assert result.comparable
    assert [(d.name, d.before, d.after) for d in result.differences] == [
        ("flags.speculative_config.num_speculative_tokens", 3, 5)
    ]
