"""envguard reads every corpus launch line exactly as the real parsers did.

tests/data/launch_lines.json: real launch lines (seed, docs, issue threads) with what the
servers' own parsers made of them, written by tools/extract_catalog.py --corpus with
sglang 0.5.2 / 0.5.10 / 0.5.23 and vllm 0.33.0 installed. Errors included.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from envguard.flags import catalog
from envguard.flags.preprocess import parse

DATA = Path(__file__).resolve().parent.parent / "data"
CORPUS = json.loads((DATA / "launch_lines.json").read_text())


def jsonable(value: Any) -> Any:
    """The same normalisation the extraction used for the real values."""
    if isinstance(value, tuple | list):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    return value


def envguard_parse(case: dict[str, Any]) -> dict[str, Any]:
    cat = catalog.load(case["server"], case["version"])
    parsed = parse(cat, shlex.split(case["argv"]), lambda p: (DATA / p).read_text())
    values = {
        dest: jsonable(flag.value)
        for dest, flag in parsed.values.items()
        if jsonable(flag.value) != jsonable(cat.by_dest[dest].default)
    }
    return {"ok": parsed.ok, "error": parsed.error, "values": values}


def test_corpus_is_large_and_covers_both_servers() -> None:
    assert len(CORPUS) >= 40
    assert {c["server"] for c in CORPUS} == {"sglang", "vllm"}
    assert all(c["expected"] is not None for c in CORPUS)
    assert sum(not c["expected"]["ok"] for c in CORPUS) >= 8  # error lines too


@pytest.mark.parametrize("case", CORPUS, ids=[c["id"] for c in CORPUS])
def test_envguard_reads_the_line_as_the_server_does(case: dict[str, Any]) -> None:
    assert envguard_parse(case) == case["expected"]
