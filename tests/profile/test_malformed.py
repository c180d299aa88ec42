"""Every malformed profile gets one clear line naming the file and the key, and exit 3."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.conftest import run_cli

HEAD = 'schema_version = 1\nname = "p"\nversion = 1\n'

# (id, file text, the one problem line expected after "<file>: ")
CASES = [
    (
        "toml-syntax",
        "schema_version = 1\nname = \n",
        "TOML syntax error: Invalid value (at line 2, column 8)",
    ),
    ("no-schema-version", 'name = "p"\nversion = 1\n', "schema_version: missing"),
    (
        "schema-version-string",
        'schema_version = "1"\nname = "p"\nversion = 1\n',
        "schema_version: must be a positive integer, got '1'",
    ),
    (
        "schema-version-zero",
        'schema_version = 0\nname = "p"\nversion = 1\n',
        "schema_version: must be a positive integer, got 0",
    ),
    (
        "schema-version-newer",
        'schema_version = 3\nname = "p"\nversion = 1\n',
        "this profile needs a newer envguard (profile format 3; this envguard reads format 2)",
    ),
    ("no-name", "schema_version = 1\nversion = 1\n", "name: required key is missing"),
    ("no-version", 'schema_version = 1\nname = "p"\n', "version: required key is missing"),
    (
        "version-zero",
        'schema_version = 1\nname = "p"\nversion = 0\n',
        "version: Input should be greater than or equal to 1",
    ),
    (
        "version-word",
        'schema_version = 1\nname = "p"\nversion = "one"\n',
        "version: Input should be a valid integer, unable to parse string as an integer",
    ),
    (
        "name-empty",
        'schema_version = 1\nname = ""\nversion = 1\n',
        "name: String should have at least 1 character",
    ),
    (
        "name-spaces",
        'schema_version = 1\nname = "my profile"\nversion = 1\n',
        "name: 'my profile' may hold only letters, digits, '.', '_' and '-'",
    ),
    (
        "unknown-top-key",
        HEAD + 'nmae = "x"\n',
        "nmae: unknown key; did you mean 'name'? (allowed here: schema_version, name, version, description, extends, server, env, gpu)",
    ),
    (
        "unknown-env-key",
        HEAD + "[env]\nrequire = {}\n",
        "env.require: unknown key; did you mean 'required'? (allowed here: required, optional, forbidden, strict_prefixes)",
    ),
    ("server-not-table", HEAD + 'server = "sglang"\n', "server: expected a table, got 'sglang'"),
    (
        "server-kind",
        HEAD + '[server]\nkind = "triton"\n',
        "server.kind: Input should be 'sglang', 'vllm' or 'generic'",
    ),
    (
        "required-bool",
        HEAD + "[env.required]\nNCCL_PROTO = true\n",
        'env.required.NCCL_PROTO: a boolean is not an environment value; write NCCL_PROTO = "1" (quoted)',
    ),
    (
        "required-list",
        HEAD + '[env.required]\nNCCL_PROTO = ["LL"]\n',
        "env.required.NCCL_PROTO: expected a string or a table (one_of, min, max, pattern), got ['LL']",
    ),
    (
        "required-float",
        HEAD + "[env.required]\nSGLANG_X = 0.5\n",
        "env.required.SGLANG_X: expected a string or a table (one_of, min, max, pattern), got 0.5",
    ),
    (
        "rule-empty",
        HEAD + "[env.required]\nNCCL_BUFFSIZE = {}\n",
        "env.required.NCCL_BUFFSIZE: an empty table requires nothing; give one_of, min, max or pattern",
    ),
    (
        "rule-unknown-key",
        HEAD + "[env.required]\nNCCL_BUFFSIZE = { minimum = 1 }\n",
        "env.required.NCCL_BUFFSIZE.minimum: unknown key; did you mean 'min'? (allowed here: one_of, min, max, pattern)",
    ),
    (
        "rule-min-word",
        HEAD + '[env.required]\nNCCL_BUFFSIZE = { min = "big" }\n',
        "env.required.NCCL_BUFFSIZE.min: Input should be a valid integer, unable to parse string as an integer",
    ),
    (
        "rule-min-over-max",
        HEAD + "[env.required]\nNCCL_BUFFSIZE = { min = 9, max = 1 }\n",
        "env.required.NCCL_BUFFSIZE: min 9 is greater than max 1",
    ),
    (
        "rule-one-of-empty",
        HEAD + "[env.required]\nNCCL_ALGO = { one_of = [] }\n",
        "env.required.NCCL_ALGO.one_of: an empty list accepts no value",
    ),
    (
        "rule-bad-pattern",
        HEAD + '[env.required]\nSGLANG_X = { pattern = "(" }\n',
        "env.required.SGLANG_X.pattern: not a valid regular expression: missing ), unterminated subpattern at position 0",
    ),
    (
        "rule-min-on-list",
        HEAD + "[env.required]\nNCCL_PROTO = { min = 1 }\n",
        "env.required.NCCL_PROTO: min/max compare integers, but NCCL_PROTO is not an integer variable",
    ),
    (
        "misspelled-required",
        HEAD + '[env.required]\nNCCL_PRTO = "LL"\n',
        "env.required.NCCL_PRTO: NCCL does not read NCCL_PRTO; did you mean NCCL_PROTO?",
    ),
    (
        "misspelled-forbidden",
        HEAD + '[env]\nforbidden = ["NCCL_GRAPH_FLE"]\n',
        "env.forbidden[0]: NCCL does not read NCCL_GRAPH_FLE; did you mean NCCL_GRAPH_FILE?",
    ),
    (
        "suffix-buffsize",
        HEAD + '[env.required]\nNCCL_BUFFSIZE = "16M"\n',
        "env.required.NCCL_BUFFSIZE: '16M' is not what it looks like to NCCL: NCCL reads '16M' as 16 (trailing 'M' is dropped)",
    ),
    (
        "lowercase-level",
        HEAD + '[env.required]\nNCCL_P2P_LEVEL = "sys"\n',
        "env.required.NCCL_P2P_LEVEL: 'sys' is not what it looks like to NCCL: NCCL matches level names case-sensitively: 'sys' is ignored; write SYS",
    ),
    (
        "lowercase-level-one-of",
        HEAD + '[env.required]\nNCCL_P2P_LEVEL = { one_of = ["SYS", "phb"] }\n',
        "env.required.NCCL_P2P_LEVEL.one_of[1]: 'phb' is not what it looks like to NCCL: NCCL matches level names case-sensitively: 'phb' is ignored; write PHB",
    ),
    (
        "unknown-proto",
        HEAD + '[env.required]\nNCCL_PROTO = "LL,Fast"\n',
        "env.required.NCCL_PROTO: 'LL,Fast' is not what it looks like to NCCL: unknown 'Fast' in NCCL_PROTO: NCCL 2.24+ fails setup, older versions skip it silently; legal: LL, LL128, Simple",
    ),
    (
        "bad-var-name",
        HEAD + '[env.required]\n"BAD-NAME" = "1"\n',
        "env.required.BAD-NAME: 'BAD-NAME' is not a valid environment variable name",
    ),
    (
        "forbidden-string",
        HEAD + '[env]\nforbidden = "CUDA_LAUNCH_BLOCKING"\n',
        "env.forbidden: expected a list, got 'CUDA_LAUNCH_BLOCKING'",
    ),
    (
        "strict-prefix-dash",
        HEAD + '[env]\nstrict_prefixes = ["NCCL-"]\n',
        "env.strict_prefixes[0]: 'NCCL-' is not a variable-name prefix",
    ),
    (
        "required-and-forbidden",
        HEAD + '[env]\nforbidden = ["NCCL_ALGO"]\n[env.required]\nNCCL_ALGO = "Ring"\n',
        "env: NCCL_ALGO is both required and forbidden (check the `extends` chain)",
    ),
    (
        "extends-string",
        HEAD + 'extends = "base.toml"\n',
        "extends: expected a list, got 'base.toml'",
    ),
    (
        "extends-missing",
        HEAD + 'extends = ["base/none.toml"]\n',
        "extends[0]: 'base/none.toml' not found",
    ),
]

S = HEAD + '[server]\nkind = "sglang"\n'
FLAG_CASES = [
    ("flags-generic", HEAD + "[server.flags]\ntp-size = 8\n", "server.flags: flags are checked for kind sglang or vllm; set server.kind"),
    ("flag-unknown", S + "[server.flags]\ntp-sise = 8\n", "server.flags.tp-sise: sglang 0.5.23 has no option 'tp-sise'; did you mean --tp-size?"),
    ("flag-abbreviated", S + "[server.flags]\nmem-frac = 0.8\n", "server.flags.mem-frac: 'mem-frac' is an abbreviation (--mem-fraction-static); write the option in full"),
    ("flag-bad-int", S + '[server.flags]\ntp-size = "eight"\n', "server.flags.tp-size: --tp-size: 'eight' is not what the server accepts (invalid literal for int() with base 10: 'eight')"),
    ("flag-switch-value", S + '[server.flags]\ntrust-remote-code = "yes"\n', "server.flags.trust-remote-code: --trust-remote-code takes no value: write true (given) or false (not given)"),
    ("flag-choice", S + '[server.flags]\nschedule-policy = "fifo"\n', "server.flags.schedule-policy: --schedule-policy: 'fifo' is not one of lpm, random, fcfs"),
    ("flag-float-for-int", S + "[server.flags]\ntp-size = 8.5\n", "server.flags.tp-size: --tp-size takes an integer, not 8.5"),
    ("forbidden-flag-unknown", S + 'forbidden_flags = ["--disable-cuda-grph"]\n', "server.forbidden_flags[0]: sglang 0.5.23 has no option '--disable-cuda-grph'; did you mean --disable-cuda-graph?"),
    ("health-url", S + 'health_url = "localhost:8000/health"\n', "server.health_url: 'localhost:8000/health' is not an http:// URL"),
    ("flag-list-with-table", S + "[server.flags]\ntp-size = [1, {a = 2}]\n", "server.flags.tp-size: expected a value (string, number or boolean), a list of them, or a table (one_of, min, max), got [1, {'a': 2}]"),
    ("flag-rule-unknown-key", S + "[server.flags]\ntp-size = { minimum = 1 }\n", "server.flags.tp-size.minimum: unknown key; did you mean 'min'? (allowed here: one_of, min, max)"),
    ("flag-rule-min-word", S + '[server.flags]\ntp-size = { min = "x" }\n', "server.flags.tp-size.min: Input should be a valid number"),
    ("flag-one-of-table", S + "[server.flags]\ntp-size = { one_of = [1, {a = 1}] }\n", "server.flags.tp-size.one_of[1]: expected a string, number or boolean, got {'a': 1}"),
]  # fmt: skip
CASES += FLAG_CASES


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_malformed_profile_gives_one_line_and_exit_3(
    runner: CliRunner, write_profile: Callable[..., Path], text: str, expected: str
) -> None:
    path = write_profile(text)
    code, out, err = run_cli(runner, "profile", "validate", str(path))
    lines = err.splitlines()
    assert code == 3
    assert out == ""
    assert len(lines) == 2, err
    assert lines[0].startswith(f"{path}: {expected}")
    assert lines[1].startswith("hint: ")


def test_there_are_at_least_thirty_distinct_cases() -> None:
    assert len({c[0] for c in CASES}) >= 30
    assert len({c[2] for c in CASES}) == len(CASES)


def test_check_answers_a_bad_profile_with_exit_3_before_touching_processes(
    runner: CliRunner, write_profile: Callable[..., Path]
) -> None:
    path = write_profile('schema_version = 1\nname = "p"\n')
    code, out, err = run_cli(runner, "check", "-p", str(path), "--pid", "1")
    assert (code, out) == (3, "")
    assert err.splitlines()[0] == f"envguard: {path}: version: required key is missing"


def test_not_utf8(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "latin1.toml"
    path.write_bytes(b'schema_version = 1\nname = "caf\xe9"\nversion = 1\n')
    code, _, err = run_cli(runner, "profile", "validate", str(path))
    assert code == 3
    assert err.splitlines()[0] == f"{path}: not UTF-8 text (byte 30)"


def test_directory_and_missing_file(runner: CliRunner, tmp_path: Path) -> None:
    code, _, err = run_cli(runner, "profile", "validate", str(tmp_path), str(tmp_path / "no.toml"))
    assert code == 3
    assert err.splitlines()[:2] == [
        f"{tmp_path}: is a directory, not a profile file",
        f"{tmp_path / 'no.toml'}: no such profile file",
    ]


def test_extends_cycle_names_the_chain(
    runner: CliRunner, write_profile: Callable[..., Path]
) -> None:
    a = write_profile(HEAD + 'extends = ["b.toml"]\n', "a.toml")
    b = write_profile(HEAD + 'extends = ["a.toml"]\n', "b.toml")
    code, _, err = run_cli(runner, "profile", "validate", str(a))
    assert code == 3
    assert err.splitlines()[0] == (
        f"{a}: extends forms a cycle: {a.resolve()} -> {b.resolve()} -> {a.resolve()}"
    )


def test_every_problem_in_every_file_is_reported(
    runner: CliRunner, write_profile: Callable[..., Path]
) -> None:
    one = write_profile(HEAD + '[env.required]\nNCCL_PRTO = "LL"\nNCCL_BUFFSIZE = "4M"\n', "1.toml")
    two = write_profile("schema_version = 1\nversion = 0\n", "2.toml")
    good = write_profile(HEAD, "3.toml")
    code, out, err = run_cli(runner, "profile", "validate", str(one), str(two), str(good))
    assert code == 3
    assert out == f"{good}: ok (p@1)\n"
    assert err.splitlines()[:4] == [
        f"{one}: env.required.NCCL_PRTO: NCCL does not read NCCL_PRTO; did you mean NCCL_PROTO?",
        f"{one}: env.required.NCCL_BUFFSIZE: '4M' is not what it looks like to NCCL: NCCL reads "
        "'4M' as 4 (trailing 'M' is dropped)",
        f"{two}: name: required key is missing",
        f"{two}: version: Input should be greater than or equal to 1",
    ]
