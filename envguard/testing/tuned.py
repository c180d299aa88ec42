"""A tuned setup (Kimi-K2.5 INT4, SGLang TP8 on 8 GPUs: 88.8 tok/s with these six NCCL
variables, 62.9 tok/s without them), for tests, benchmarks and the demo."""

from __future__ import annotations

# The six NCCL variables of the 88.8 tok/s baseline.
TUNED_NCCL = {
    "NCCL_PROTO": "LL",
    "NCCL_ALGO": "Ring",
    "NCCL_P2P_LEVEL": "SYS",
    "NCCL_MAX_NCHANNELS": "16",
    "NCCL_BUFFSIZE": "16777216",
    "NCCL_NTHREADS": "512",
}

# Its launch line, after `python3 -m sglang.launch_server`.
TUNED_LAUNCH = [
    "--model-path",
    "/models/kimi-k2.5-int4",
    "--trust-remote-code",
    "--tp-size",
    "8",
    "--mem-fraction-static",
    "0.88",
    "--host",
    "0.0.0.0",
    "--port",
    "8000",
    "--num-continuous-decode-steps",
    "4",
    "--disable-custom-all-reduce",
]
