"""`envguard args`: the corpus through the command, exact text output, secrets."""

from __future__ import annotations

import json
import shlex
from typing import Any

import pytest
from click.testing import CliRunner

from envguard.knowledge.redaction import REDACTED, looks_secret
from tests.conftest import run_cli
from tests.flags.test_corpus import CORPUS, DATA


@pytest.mark.parametrize("case", CORPUS, ids=[c["id"] for c in CORPUS])
def test_args_json_matches_the_real_parser(
    runner: CliRunner, case: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(DATA)  # --config paths in the corpus are relative to it
    code, out, _ = run_cli(
        runner,
        "args",
        "--server",
        case["server"],
        "--version",
        case["version"],
        "--json",
        "--",
        *shlex.split(case["argv"]),
    )
    expected = case["expected"]
    secret_free = {
        dest: REDACTED if looks_secret(dest) else value
        for dest, value in expected["values"].items()
    }
    report = json.loads(out)
    assert (code, report["ok"], report["error"]) == (
        0 if expected["ok"] else 1,
        expected["ok"],
        expected["error"],
    )
    # `args` lists what was given; the corpus lists what differs from the default.
    assert {d: v for d, v in report["values"].items() if d in secret_free} == secret_free


def test_text_output_names_spelling_and_origin(
    runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(DATA)
    code, out, err = run_cli(
        runner,
        "args",
        "--server",
        "sglang",
        "--",
        "python3",
        "-m",
        "sglang.launch_server",
        "--model-path",
        "m",
        "--config",
        "configs/sglang-tp8.yaml",
        "--tp",
        "4",
        "--api-key",
        "sk-1",
    )
    assert (code, err) == (0, "")
    assert out == (
        "sglang 0.5.23 (newest catalog; --version V to choose):\n"
        "  model_path                   m  [cmdline]  --model-path\n"
        "  trust_remote_code            true  [--config configs/sglang-tp8.yaml]  --trust-remote-code\n"
        "  mem_fraction_static          0.8  [--config configs/sglang-tp8.yaml]  --mem-fraction-static\n"
        "  num_continuous_decode_steps  4  [--config configs/sglang-tp8.yaml]  --num-continuous-decode-steps\n"
        "  tp_size                      4  [cmdline]  --tp\n"
        "  api_key                      <redacted>  [cmdline]  --api-key\n"
    )
    assert "sk-1" not in out


def test_rejected_line_exits_1(runner: CliRunner) -> None:
    code, out, _ = run_cli(
        runner, "args", "--server", "sglang", "--", "--model-path", "m", "--pp", "2"
    )
    assert code == 1
    assert out == (
        "sglang 0.5.23 (newest catalog; --version V to choose):\n"
        "  error: ambiguous option: --pp could match --pp-size, --pp-max-micro-batch-size, "
        "--pp-async-batch-depth\n"
        "  (the server would exit with this error instead of starting)\n"
    )


def test_version_without_catalog_says_which_one_it_used(runner: CliRunner) -> None:
    code, out, err = run_cli(
        runner,
        "args",
        "--server",
        "vllm",
        "--version",
        "0.40.1",
        "--",
        "vllm",
        "serve",
        "m",
        "-tp",
        "2",
    )
    assert code == 0
    assert err == (
        "note: no flag catalog for vllm 0.40.1: using the nearest, 0.33.0 (have 0.33.0; "
        "tools/extract_catalog.py makes one)\n"
    )
    assert "tensor_parallel_size  2  [cmdline]  -tp" in out
