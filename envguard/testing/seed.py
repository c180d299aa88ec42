"""The seed story's tuned setup (shared/seeds/), for tests, benchmarks and the demo."""

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
SEED_LAUNCH = [
    "--model-path",
    "/shared/kimi-k2.5-int4",
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
