"""evaluation.check: (profile, observation) -> findings, with no process and no I/O."""

from __future__ import annotations

from envguard.evaluation.check import evaluate
from envguard.evaluation.findings import Finding, verdict
from envguard.profile.schema import ValueRule
from tests.builders import TUNED_NCCL, observation, profile

TUNED = profile(required=dict(TUNED_NCCL), strict=("NCCL_",))


def kinds(findings: list[Finding]) -> list[tuple[str, str, str | None]]:
    return [(f.kind, f.subject, f.role) for f in findings]


def test_a_tuned_tree_has_no_findings() -> None:
    tree = observation(("launcher", dict(TUNED_NCCL)), ("scheduler_TP0", dict(TUNED_NCCL)))
    assert evaluate(TUNED, tree) == []
    assert verdict([]) == "ok"


def test_values_are_compared_as_nccl_reads_them() -> None:
    hexed = {**TUNED_NCCL, "NCCL_BUFFSIZE": "0x1000000", "NCCL_PROTO": "ll"}
    assert evaluate(TUNED, observation(("launcher", hexed))) == []
    [finding] = evaluate(TUNED, observation(("launcher", {**TUNED_NCCL, "NCCL_BUFFSIZE": "16M"})))
    assert (finding.kind, finding.expected, finding.actual) == ("mismatch", "16777216", "16M")
    assert finding.hint.startswith("NCCL reads '16M' as 16")


def test_missing_forbidden_unexpected_misspelled() -> None:
    rules = profile(required={"NCCL_PROTO": "LL"}, forbidden=("CUDA_LAUNCH_BLOCKING",),
                    strict=("NCCL_",))  # fmt: skip
    env = {"CUDA_LAUNCH_BLOCKING": "1", "NCCL_PRTO": "LL", "NCCL_IB_HCA": "mlx5"}
    found = evaluate(rules, observation(("launcher", env)))
    assert kinds(found) == [
        ("missing", "NCCL_PROTO", "launcher"),
        ("forbidden", "CUDA_LAUNCH_BLOCKING", "launcher"),
        ("unexpected", "NCCL_IB_HCA", "launcher"),
        ("misspelled", "NCCL_PRTO", "launcher"),
    ]
    assert found[3].hint == "NCCL ignores NCCL_PRTO without a word; did you mean NCCL_PROTO?"


def test_an_empty_nccl_value_is_unset() -> None:
    [finding] = evaluate(
        profile(required={"NCCL_PROTO": "LL"}), observation(("l", {"NCCL_PROTO": ""}))
    )
    assert (finding.kind, finding.actual) == ("missing", "")
    assert "an empty value counts as unset for NCCL" in finding.hint


def test_optional_values_may_be_unset_but_not_wrong() -> None:
    rules = profile(optional={"NCCL_DEBUG": ValueRule(one_of=("VERSION", "WARN"))})
    assert evaluate(rules, observation(("launcher", {}))) == []
    [finding] = evaluate(rules, observation(("launcher", {"NCCL_DEBUG": "INFO"})))
    assert (finding.kind, finding.expected) == ("mismatch", "one of VERSION, WARN or unset")


def test_ranks_that_disagree() -> None:
    tree = observation(
        ("launcher", {}),
        ("scheduler_TP0", {"NCCL_ALGO": "Ring"}),
        ("scheduler_TP1", {"NCCL_ALGO": "Tree"}),
    )
    [finding] = evaluate(profile(), tree)
    assert (finding.kind, finding.subject) == ("inconsistent", "NCCL_ALGO")
    assert finding.actual == "scheduler_TP0=Ring, scheduler_TP1=Tree"


def test_a_clobbered_environ_is_unverifiable_never_ok() -> None:
    found = evaluate(TUNED, observation(("launcher", dict(TUNED_NCCL)), ("scheduler_TP0", None)))
    assert kinds(found) == [("unverifiable", "environment", "scheduler_TP0")]
    assert "SPT_NOENV=1" in found[0].hint
    assert verdict(found) == "unverifiable"


def test_secrets_never_reach_a_finding() -> None:
    rules = profile(required={"HF_TOKEN": "expected-secret"}, strict=("VLLM_",))
    env = {"HF_TOKEN": "actual-secret", "VLLM_API_KEY": "k-secret"}
    text = repr(evaluate(rules, observation(("launcher", env))))
    assert "secret" not in text and "<redacted>" in text
