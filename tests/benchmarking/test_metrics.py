from __future__ import annotations

import pytest

from envguard.benchmarking.metrics import extract, last_json_object, parse_metric_options
from envguard.errors import EnvguardError


def test_last_json_object_wins_and_nested_numbers_are_flattened() -> None:
    text = 'start\n{"tok_s": 1}\nRun 1/5: 500 tokens\n{"tok_s": 88.8, "lat": {"p50": 11.2}, "ok": true, "name": "x"}\n'
    assert extract(text, []) == {"tok_s": 88.8, "lat.p50": 11.2}


def test_a_pretty_printed_object_spanning_lines() -> None:
    text = 'noise {not json}\n{\n  "tok_s": 75.9,\n  "runs": 5\n}\n'
    assert last_json_object(text) == {"tok_s": 75.9, "runs": 5}


def test_metric_regexes_take_the_last_match() -> None:
    text = "Overall tok/s: 80.1\nOverall tok/s: 88.8\nAvg tok/s: 88.7\n"
    patterns = parse_metric_options(["tok_s=Overall tok/s: ([0-9.]+)", "avg=Avg tok/s: ([0-9.]+)"])
    assert extract(text, patterns) == {"tok_s": 88.8, "avg": 88.7}


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("tok_s", "expected NAME=REGEX"),
        ("x=(", "not a valid regular expression"),
        ("x=[0-9]+", "the regex needs a group around the number"),
    ],
)
def test_bad_metric_options(option: str, message: str) -> None:
    with pytest.raises(EnvguardError, match=message):
        parse_metric_options([option])
