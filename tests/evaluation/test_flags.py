"""evaluation.flags: a launch line read with the server's own parser, against a profile."""

from __future__ import annotations

from envguard.evaluation.flags import evaluate_flags
from envguard.flags.catalog import load
from envguard.flags.preprocess import parse
from envguard.flags.recognise import recognise
from envguard.probes.launch_line import LaunchObservation
from envguard.profile.schema import FlagRule, ServerSection
from tests.builders import tuned_launch

SGLANG = ServerSection(
    kind="sglang",
    flags={"tp-size": 8, "mem-fraction-static": FlagRule(min=0.8, max=0.9)},
    forbidden_flags=("disable-cuda-graph",),
)


def launch(*args: str, version: str = "0.5.23") -> LaunchObservation:
    argv = ["python3", "-m", "sglang.launch_server", *args]
    recognised = recognise(argv)
    catalog = load("sglang", version)
    assert recognised is not None
    parsed = parse(catalog, list(recognised.args))
    return LaunchObservation(None, recognised, catalog, None, None, parsed)


def findings(*args: str, server: ServerSection = SGLANG) -> list[tuple[str, str, str | None]]:
    return [(f.kind, f.subject, f.actual) for f in evaluate_flags(server, launch(*args), "command")]


def test_the_tuned_line_in_any_spelling_matches() -> None:
    assert findings(*tuned_launch()) == []
    assert findings("--model-path", "m", "--tp", "8", "--mem-frac", ".88") == []


def test_a_value_given_in_another_spelling_is_named_as_given() -> None:
    assert findings("--model-path", "m", "--tp", "4", "--mem-frac", "0.88") == [
        ("mismatch", "--tp-size", "4 (as --tp)")
    ]


def test_a_default_that_does_not_satisfy_the_profile() -> None:
    assert findings("--model-path", "m", "--mem-frac", "0.88") == [
        ("missing", "--tp-size", "not given (default 1)")
    ]


def test_a_range_and_a_forbidden_switch() -> None:
    assert findings(
        "--model-path", "m", "--tp", "8", "--mem-frac", "0.95", "--disable-cuda-graph"
    ) == [
        ("mismatch", "--mem-fraction-static", "0.95 (as --mem-frac)"),
        ("forbidden", "--disable-cuda-graph", "true (as --disable-cuda-graph)"),
    ]


def test_a_line_the_server_would_refuse() -> None:
    [(kind, subject, actual)] = findings("--model-path", "m", "--pp", "2")
    assert (kind, subject) == ("rejected", "command line")
    assert actual is not None and "ambiguous option: --pp" in actual


def test_another_server_kind_is_a_mismatch() -> None:
    vllm = ServerSection(kind="vllm", flags={"tensor-parallel-size": 8})
    assert findings("--model-path", "m", server=vllm) == [("mismatch", "server kind", "sglang")]
