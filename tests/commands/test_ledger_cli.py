"""`envguard ledger list | show | export | compare` on a real SQLite file."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from envguard.ledger.store import Ledger
from tests.conftest import run_cli
from tests.ledger.builders import record, varied


@pytest.fixture
def ledger_file(tmp_path: Path) -> str:
    ledger = Ledger.open(tmp_path / "l.db")
    ledger.add(record(metrics={"tok_s": 88.8}))  # 1: the tuned baseline
    ledger.add(
        record(
            metrics={"tok_s": 94.0},
            profile="kimi",
            setup=varied(flags={"speculative_algorithm": "EAGLE3"}),
        )
    )  # 2: EAGLE-3
    ledger.add(record(metrics={"tok_s": 62.9}, setup=varied(env={"NCCL_PROTO": "Simple"})))  # 3
    ledger.add(
        record(verdict="refused", reasons=("server restarted",), metrics={"tok_s": 70.0})
    )  # 4
    ledger.close()
    return str(tmp_path / "l.db")


def test_list_newest_first_with_filters(runner: CliRunner, ledger_file: str) -> None:
    code, out, _ = run_cli(runner, "ledger", "list", "--ledger", ledger_file)
    assert code == 0
    assert [line.split()[0] for line in out.splitlines()] == ["#4", "#3", "#2", "#1"]
    code, out, _ = run_cli(
        runner, "ledger", "list", "--ledger", ledger_file, "--verdict", "refused"
    )
    assert out.splitlines()[0].endswith("refused  tok_s=70")
    code, out, _ = run_cli(
        runner, "ledger", "list", "--ledger", ledger_file, "--json", "--limit", "1"
    )
    assert [r["id"] for r in json.loads(out)] == [4]


def test_show_and_export(runner: CliRunner, ledger_file: str) -> None:
    code, out, _ = run_cli(runner, "ledger", "show", "--ledger", ledger_file, "1")
    assert code == 0
    assert json.loads(out) == dataclasses.asdict(dataclasses.replace(record(), id=1)) | {
        "reasons": [],
        "command": ["python", "bench.py"],
    }
    code, out, _ = run_cli(runner, "ledger", "export", "--ledger", ledger_file, "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["id"] for r in rows] == ["1", "2", "3", "4"]
    assert json.loads(rows[3]["reasons"]) == ["server restarted"]
    code, out, _ = run_cli(
        runner, "ledger", "export", "--ledger", ledger_file, "--verdict", "valid"
    )
    assert (code, len(json.loads(out))) == (0, 3)


def test_compare_varies_only_what_it_is_told(runner: CliRunner, ledger_file: str) -> None:
    code, out, err = run_cli(
        runner,
        "ledger",
        "compare",
        "--ledger",
        ledger_file,
        "1",
        "2",
        "--vary",
        "speculative-algorithm",
    )
    assert (code, err) == (0, "")
    fp = record().fingerprint.removeprefix("sha256:")[:12]  # type: ignore[union-attr]
    assert out.splitlines()[1:] == [
        "  setup: flags.speculative_algorithm: <absent> -> EAGLE3  (varied)",
        "  metrics:",
        "    tok_s  88.8 -> 94  +5.2 (+5.9%)",
    ]
    assert out.splitlines()[0].startswith(f"compare #1 (kimi@2, {fp}) -> #2 (kimi@2, ")


def test_compare_refuses_another_setup_and_invalid_records(
    runner: CliRunner, ledger_file: str
) -> None:
    code, _out, err = run_cli(
        runner,
        "ledger",
        "compare",
        "--ledger",
        ledger_file,
        "3",
        "2",
        "--vary",
        "speculative_algorithm",
    )
    assert code == 1
    assert err == (
        "refused: the setups differ in env.NCCL_PROTO, which --vary does not name: the "
        "difference in results could come from any of them\n"
    )
    code, _, err = run_cli(runner, "ledger", "compare", "--ledger", ledger_file, "1", "4")
    assert code == 1 and err == "refused: #4 (B) is not a valid result: server restarted\n"


def test_baseline_latest(runner: CliRunner, ledger_file: str) -> None:
    code, out, _ = run_cli(
        runner,
        "ledger",
        "compare",
        "--ledger",
        ledger_file,
        "--json",
        "--baseline",
        "latest",
        "3",
        "--vary",
        "NCCL_PROTO",
    )
    report = json.loads(out)
    assert (code, report["before"], report["after"], report["comparable"]) == (1, 2, 3, False)
    assert report["refusals"] == [
        "the setups differ in flags.speculative_algorithm, which --vary "
        "does not name: the difference in results could come from any "
        "of them"
    ]


def test_missing_ledger_is_a_clear_error(runner: CliRunner, tmp_path: Path) -> None:
    code, out, err = run_cli(runner, "ledger", "list", "--ledger", str(tmp_path / "none.db"))
    assert (code, out) == (3, "")
    assert err.splitlines()[0] == f"envguard: {tmp_path / 'none.db'}: no ledger here yet"
