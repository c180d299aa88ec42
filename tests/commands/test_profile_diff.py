"""`envguard profile diff`: requirements added, removed and changed, with `extends`
resolved on both sides; secrets never shown; exit codes as diff(1)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import PROFILES, envguard_process

BASE = PROFILES / "base" / "rtx-pro-6000-pcie5-8gpu.toml"

OLD = f"""schema_version = 1
name = "k"
version = 3
extends = ["{BASE}"]
[env]
forbidden = ["NCCL_IB_HCA", "NCCL_GRAPH_FILE"]
[env.required]
NCCL_BUFFSIZE = "8388608"
HF_TOKEN = "hf_old_S3CR3T"
[server]
kind = "sglang"
[server.flags]
tp-size = 8
api-key = "old-S3CR3T"
"""

NEW = f"""schema_version = 2
name = "k"
version = 4
extends = ["{BASE}"]
[env]
forbidden = ["NCCL_GRAPH_FILE", "NCCL_IB_HCA", "NCCL_IB_GID_INDEX"]
[env.required]
NCCL_ALGO = {{ one_of = ["Ring", "Tree"] }}
HF_TOKEN = "hf_new_S3CR3T"
[server]
kind = "sglang"
[server.flags]
tp-size = 4
api-key = "new-S3CR3T"
[gpu]
count = 8
"""


def test_every_change_with_both_values(tmp_path: Path) -> None:
    (tmp_path / "old.toml").write_text(OLD)
    (tmp_path / "new.toml").write_text(NEW)
    result = envguard_process(tmp_path, "profile", "diff", "old.toml", "new.toml")
    assert result.returncode == 1
    assert result.stdout == (
        "profile diff: k@3 (old.toml) -> k@4 (new.toml)\n"
        '  added    env.forbidden: "NCCL_IB_GID_INDEX"\n'  # order in a list is no change
        '  changed  env.required.HF_TOKEN: "<redacted>" -> "<redacted>"\n'
        '  changed  env.required.NCCL_ALGO: "Ring" -> {"one_of": ["Ring", "Tree"]}\n'
        # The base requires 16777216; old.toml lowered it, new.toml does not.
        '  changed  env.required.NCCL_BUFFSIZE: "8388608" -> "16777216"\n'
        "  added    gpu.count: 8\n"
        "  changed  schema_version: 1 -> 2\n"  # [gpu] is profile format 2
        '  changed  server.flags.api-key: "<redacted>" -> "<redacted>"\n'
        "  changed  server.flags.tp-size: 8 -> 4\n"
        "  changed  version: 3 -> 4\n"
        "9 changes\n"
    )
    as_json = envguard_process(tmp_path, "profile", "diff", "old.toml", "new.toml", "--json")
    document = json.loads(as_json.stdout)
    assert document["exit_code"] == 1 and len(document["changes"]) == 9
    assert document["changes"][0] == {
        "change": "added", "path": "env.forbidden", "before": "<absent>", "after": "NCCL_IB_GID_INDEX",
    }  # fmt: skip
    assert "S3CR3T" not in result.stdout + as_json.stdout


def test_the_same_profile_by_name_and_path(tmp_path: Path) -> None:
    path = PROFILES / "kimi-k2.5-int4-tp8.toml"
    same = envguard_process(tmp_path, "profile", "diff", "kimi-k2.5-int4-tp8", str(path))
    assert (same.returncode, same.stdout.splitlines()[-1]) == (0, "no differences")


def test_the_shipped_demo_against_the_seed(tmp_path: Path) -> None:
    """What the README's cron line checks beyond the quickstart."""
    result = envguard_process(
        tmp_path, "profile", "diff", str(PROFILES / "demo.toml"), "kimi-k2.5-int4-tp8"
    )
    assert result.returncode == 1
    assert '  changed  server.kind: "generic" -> "sglang"\n' in result.stdout
    assert "  added    server.flags.tp-size: 8\n" in result.stdout
    assert (
        '  added    env.required.SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN: "1"\n' in result.stdout
    )


def test_an_unreadable_profile_is_exit_3(tmp_path: Path) -> None:
    result = envguard_process(tmp_path, "profile", "diff", "nope.toml", "demo")
    assert result.returncode == 3
    assert result.stderr.startswith("envguard: nope.toml: no such profile file\n")
