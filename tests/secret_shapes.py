"""Secrets in every shape envguard must never let out, each carrying the marker `S3CR3T`
so that a test can grep every byte written for it.

- ENV_BY_NAME: variables whose *name* says credential (the value is plain).
- ENV_BY_VALUE: tuning-namespace or declared names whose *value* holds a credential.
- SERVER_ARGS: secret server flags, full and abbreviated, as SGLang or vLLM accept them.
- BENCH_ARGS: a benchmark command's own credentials (headers, URLs, assignments).
"""

from __future__ import annotations

MARKER = "S3CR3T"

PEM = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ" + MARKER + "40AAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "-----END OPENSSH PRIVATE KEY-----\n"
)

ENV_BY_NAME: dict[str, str] = {
    "HF_TOKEN": f"plain-{MARKER}01",
    "HUGGING_FACE_HUB_TOKEN": f"plain-{MARKER}02",
    "OPENAI_API_KEY": f"plain-{MARKER}03",
    "VLLM_API_KEY": f"plain-{MARKER}04",
    "SGLANG_API_KEY": f"plain-{MARKER}05",
    "WANDB_API_KEY": f"plain-{MARKER}06",
    "AWS_SECRET_ACCESS_KEY": f"plain-{MARKER}07",
    "AWS_ACCESS_KEY_ID": f"plain-{MARKER}08",
    "AWS_SESSION_TOKEN": f"plain-{MARKER}09",
    "GITHUB_TOKEN": f"plain-{MARKER}10",
    "DB_PASSWORD": f"plain-{MARKER}11",
    "VLLM_DB_PASS": f"plain-{MARKER}12",
    "CUDA_SERVER_PASS": f"plain-{MARKER}13",
    "NCCL_SECRET": f"plain-{MARKER}14",
    "TORCH_PASSPHRASE": f"plain-{MARKER}15",
    "SSH_PRIVATE_KEY": PEM,
    "NGC_API_KEY": f"plain-{MARKER}16",
    "REDIS_AUTH": f"plain-{MARKER}17",
    "SESSION_COOKIE": f"plain-{MARKER}18",
    "SGLANG_ADMIN_API_KEY": f"plain-{MARKER}19",
    "SLACK_BOT_TOKEN": f"plain-{MARKER}20",
    "PYTORCH_CREDENTIALS": f"plain-{MARKER}21",
    "azure_openai_apiKey": f"plain-{MARKER}22",
    "UCX_SECRET_TOKEN": f"plain-{MARKER}23",
}

ENV_BY_VALUE: dict[str, str] = {
    "SGLANG_ENDPOINT": f"https://user:pw-{MARKER}24@registry.example",
    "PYTORCH_S3_URL": f"s3://AKIAABCDEFGHIJKLMNOP:pw-{MARKER}25@bucket/models",
    "VLLM_REMOTE_URL": f"https://hf_{MARKER}26abcdefghijklmnopqrstuvwxyz@hub.example/repo",
    "TORCH_HUB_URL": f"https://hub.example/models?api_key={MARKER}27&revision=main",
    "CUDA_PROXY_HEADER": f"Authorization: Bearer tok-{MARKER}28xyz",
    "SGLANG_UPSTREAM_HEADERS": f"X-Api-Key: {MARKER}29",
    "VLLM_HUB_NOTE": f"use hf_{MARKER}30ABCDEFGHIJKLMNOPQRSTUVWX for pulls",
    "OMP_NOTE": f"ghp_{MARKER}31abcdefghijklmnopqrstuvwxyz0123",
    "NVIDIA_NOTE": f"nvapi-{MARKER}32-abcdefghijklmnopqrstuvwxyz",
    "TRITON_NOTE": f"sk-proj-{MARKER}33abcdefghijklmnopqrstuvwxyz",
    "FLASHINFER_NOTE": f"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiI{MARKER}34In0.c2lnbmF0dXJlX{MARKER}34",
    "DECLARED_URL": f"postgres://svc:pw-{MARKER}35@db.internal:5432/runs",
}

# (server kind, argv after the entry point) with the secret values marked.
SERVER_ARGS_SGLANG = [
    "--api-key",
    f"plain-{MARKER}36",
    f"--admin-api={MARKER}37",
]
SERVER_ARGS_VLLM = [
    "--hf-tok",
    f"plain-{MARKER}38",
    "--api-k",
    f"plain-{MARKER}39",
]

BENCH_ARGS = [
    "-H",
    f"Authorization: Bearer tok-{MARKER}40abc",
    "--url",
    f"https://user:pw-{MARKER}41@host.example/v1",
    f"--header=X-Api-Key: {MARKER}42",
    f"--token={MARKER}43",
    f"OPENAI_API_KEY={MARKER}44",
    f"--auth-token={MARKER}45",
]


def every_value() -> list[str]:
    return [*ENV_BY_NAME.values(), *ENV_BY_VALUE.values()]


def count() -> int:
    """How many distinct secret shapes: each carries its own marker number."""
    text = "".join([*every_value(), *SERVER_ARGS_SGLANG, *SERVER_ARGS_VLLM, *BENCH_ARGS])
    return len({text[i + len(MARKER) : i + len(MARKER) + 2] for i in _find_all(text)})


def _find_all(text: str) -> list[int]:
    found, start = [], text.find(MARKER)
    while start != -1:
        found.append(start)
        start = text.find(MARKER, start + 1)
    return found
