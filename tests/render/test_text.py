"""render.text: findings grouped by process; processes with the same findings share a block."""

from __future__ import annotations

import click

from envguard.evaluation.check import evaluate
from envguard.evaluation.report import CheckReport
from envguard.probes.target import Target
from envguard.profile.loader import LoadedProfile
from envguard.render.text import check_text
from tests.builders import TUNED_NCCL, observation, profile


def text_of(*processes: tuple[str, dict[str, str] | None], quiet: bool = False) -> str:
    """As printed where styles are off (not a terminal, or NO_COLOR)."""
    return click.unstyle(check_text(report_of(*processes), quiet=quiet))


def report_of(*processes: tuple[str, dict[str, str] | None]) -> CheckReport:
    rules = profile(required={"NCCL_PROTO": "LL"}, name="demo")
    tree = observation(*processes)
    loaded = LoadedProfile(rules, "demo.toml", ("demo.toml",), "0" * 64)
    return CheckReport(
        loaded, Target(pid=100), (100,), tree.processes, tuple(evaluate(rules, tree))
    )


def test_identical_findings_in_many_processes_read_as_one_block() -> None:
    text = text_of(
        ("launcher", {}), ("scheduler_TP0", {}), ("scheduler_TP1", {}), ("detokenizer", {"NCCL_PROTO": "LL"}),
    )  # fmt: skip
    assert text.splitlines() == [
        "envguard check: profile demo@1 (demo.toml), pid 100, 4 processes",
        "",
        "launcher (100), scheduler_TP0 (101), scheduler_TP1 (102):",
        "  missing      NCCL_PROTO: expected LL, not set [environ]",
        "               hint: set NCCL_PROTO=LL in the server's environment (envguard launch "
        "injects the profile's values)",
        "",
        "ok: detokenizer (103)",
        "",
        "verdict: drift - 3 findings in 4 processes differ from demo@1 (exit 1)",
    ]


def test_quiet_is_the_verdict_line_alone() -> None:
    text = text_of(("launcher", dict(TUNED_NCCL)), quiet=True)
    assert text == "verdict: ok - 1 processes match demo@1 (exit 0)"


def test_an_unverifiable_process_says_so() -> None:
    text = text_of(("launcher", {"NCCL_PROTO": "LL"}), ("scheduler_TP0", None))
    assert "  unverifiable environment: overwritten by setproctitle" in text
    assert text.endswith(
        "verdict: unverifiable - part of the setup could not be verified; nothing found "
        "differs (exit 3)"
    )
