"""launching.environment: the environment envguard launch builds from a profile."""

from __future__ import annotations

from envguard.launching.environment import build_environment, keep_for_clean_env
from envguard.profile.schema import ValueRule
from tests.builders import TUNED_NCCL, profile


def test_required_values_override_the_callers() -> None:
    built = build_environment(
        profile(required=dict(TUNED_NCCL)), {"NCCL_PROTO": "Simple", "X": "1"}
    )
    assert {k: built.environ[k] for k in TUNED_NCCL} == TUNED_NCCL
    assert built.environ["X"] == "1" and built.environ["SPT_NOENV"] == "1"
    assert built.injected == {**TUNED_NCCL, "SPT_NOENV": "1"}


def test_an_accepted_value_is_kept_as_the_caller_wrote_it() -> None:
    built = build_environment(
        profile(required={"NCCL_BUFFSIZE": "16777216"}), {"NCCL_BUFFSIZE": "0x1000000"}
    )
    assert built.environ["NCCL_BUFFSIZE"] == "0x1000000" and "NCCL_BUFFSIZE" not in built.injected


def test_forbidden_and_unlisted_strict_names_are_dropped() -> None:
    rules = profile(
        required={"NCCL_PROTO": "LL"}, forbidden=("CUDA_LAUNCH_BLOCKING",), strict=("NCCL_",)
    )
    built = build_environment(rules, {"CUDA_LAUNCH_BLOCKING": "1", "NCCL_IB_HCA": "mlx5"})
    assert built.dropped == ("CUDA_LAUNCH_BLOCKING", "NCCL_IB_HCA")
    assert "NCCL_IB_HCA" not in built.environ


def test_rules_choose_a_value_or_say_why_they_cannot() -> None:
    rules = profile(required={
        "A_ONE": ValueRule(one_of=("x", "y")), "A_MIN": ValueRule(min=8), "A_PAT": ValueRule(pattern="a.*"),
    })  # fmt: skip
    built = build_environment(rules, {})
    assert (built.environ["A_ONE"], built.environ["A_MIN"]) == ("x", "8")
    assert built.unmet == (("A_PAT", "only a pattern (a.*) is given: no value to set"),)


def test_a_forbidden_value_from_an_nccl_config_file_is_neutralised() -> None:
    built = build_environment(
        profile(forbidden=("NCCL_GRAPH_FILE",)), {}, {"NCCL_GRAPH_FILE": "/g.xml"}
    )
    assert built.environ["NCCL_GRAPH_FILE"] == "" and built.neutralised == ("NCCL_GRAPH_FILE",)


def test_clean_env_keeps_what_a_service_would_have() -> None:
    kept = keep_for_clean_env({"PATH": "/bin", "LC_ALL": "C", "HF_TOKEN": "t", "NCCL_ALGO": "Tree"})
    assert kept == {"PATH": "/bin", "LC_ALL": "C"}
