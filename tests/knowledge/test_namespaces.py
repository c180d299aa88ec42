from __future__ import annotations

import pytest

from envguard.knowledge.namespaces import HIDDEN, REDACTED, redact_argv, shown


@pytest.mark.parametrize(
    "name",
    [
        "HF_TOKEN",
        "OPENAI_API_KEY",
        "VLLM_API_KEY",
        "DB_PASSWORD",
        "AWS_SECRET_ACCESS_KEY",
        "GITHUB_AUTH",
        "NCCL_SECRET",
        "my_credentials",
        "SSH_PRIVATE",
    ],
)
def test_secret_looking_names_are_always_redacted(name: str) -> None:
    assert shown(name, "s3cr3t", frozenset({name})) == REDACTED


def test_values_outside_tuning_namespaces_are_hidden_unless_declared() -> None:
    assert shown("HOSTNAME", "box", frozenset()) == HIDDEN
    assert shown("HOSTNAME", "box", frozenset({"HOSTNAME"})) == "box"
    assert shown("NCCL_PROTO", "LL", frozenset()) == "LL"
    assert shown("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True") == (
        "expandable_segments:True"
    )


def test_control_characters_are_escaped() -> None:
    assert shown("NCCL_SOCKET_IFNAME", "eth0\nINJECTED") == "eth0\\nINJECTED"


def test_secret_flags_are_redacted_in_command_lines() -> None:
    argv = [
        "python",
        "-m",
        "sglang.launch_server",
        "--api-key",
        "sk-1",
        "--admin-api-key=sk-2",
        "HF_TOKEN=hf_3",
        "--tp-size",
        "8",
    ]
    assert redact_argv(argv) == [
        "python",
        "-m",
        "sglang.launch_server",
        "--api-key",
        REDACTED,
        f"--admin-api-key={REDACTED}",
        f"HF_TOKEN={REDACTED}",
        "--tp-size",
        "8",
    ]
