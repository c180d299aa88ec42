"""What SGLang and vLLM processes look like from outside (sglang 0.5.x, vllm 0.33)."""

from __future__ import annotations

import re
from typing import Literal

# The servers envguard reads flags for, and what a profile may describe ("generic": any other
# command, whose flags envguard does not read). Declared here once.
ServerKind = Literal["sglang", "vllm"]
ProfileKind = Literal["sglang", "vllm", "generic"]

# Workers set their title with setproctitle: `sglang::scheduler_TP0`, `sglang::detokenizer`,
# `sglang::data_parallel_controller`; vLLM `VLLM::EngineCore`, `VLLM::Worker_TP0` (the
# prefix comes from VLLM_PROCESS_NAME_PREFIX, VLLM by default).
TITLE_PREFIXES = ("sglang::", "VLLM::")

# Processes that are NCCL ranks: their settings must agree (NVIDIA/nccl#394, #1136).
RANK_ROLE = re.compile(r"(scheduler|Worker)_(DP\d+_)?(TP|PP)\d+")

# setproctitle keeps the environment readable when this is set (verified, setproctitle 1.3.8).
SPT_NOENV = "SPT_NOENV"


def role_from_title(title: str) -> str | None:
    """`sglang::scheduler_TP3` -> `scheduler_TP3`; None for a process without a server title."""
    for prefix in TITLE_PREFIXES:
        if title.startswith(prefix):
            return title[len(prefix) :].strip() or title
    return None


def is_rank(role: str) -> bool:
    return RANK_ROLE.match(role) is not None
