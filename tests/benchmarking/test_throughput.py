"""The throughput probe against a real HTTP server on 127.0.0.1 speaking both protocols."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import ClassVar

import pytest

from envguard.benchmarking.throughput import measure
from envguard.errors import EnvguardError
from tests.builders import http_server


class FakeInference(BaseHTTPRequestHandler):
    """OpenAI-compatible /v1/completions and SGLang /generate; 1 ms per generated token."""

    requests: ClassVar[list[dict[str, object]]] = []

    def do_GET(self) -> None:
        if self.path == "/v1/models":
            self._json({"object": "list", "data": [{"id": "kimi-k2.5-int4", "object": "model"}]})
        else:
            self._json({}, 404)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        FakeInference.requests.append({"path": self.path, **body})
        if self.path == "/v1/completions":
            tokens = body["max_tokens"]
            time.sleep(tokens / 1000)
            self._json(
                {
                    "choices": [{"text": "x" * tokens}],
                    "usage": {"prompt_tokens": 14, "completion_tokens": tokens},
                }
            )
        elif self.path == "/generate":
            tokens = body["sampling_params"]["max_new_tokens"]
            time.sleep(tokens / 1000)
            self._json({"text": "x" * tokens, "meta_info": {"completion_tokens": tokens}})
        else:
            self._json({"error": "not found"}, 404)

    def _json(self, data: object, code: int = 200) -> None:
        payload = json.dumps(data).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    FakeInference.requests = []
    with http_server(FakeInference) as url:
        yield url


@pytest.mark.parametrize("api", ["completions", "generate"])
def test_probe_counts_tokens_and_prints_runs_like_the_seed_script(server: str, api: str) -> None:
    lines: list[str] = []
    metrics = measure(
        server, api=api, max_tokens=50, runs=3, warmup=1, timeout=10, echo=lines.append
    )  # type: ignore[arg-type]
    assert metrics["tokens"] == 150 and metrics["runs"] == 3
    assert metrics["tok_s_min"] <= metrics["tok_s_mean"] <= metrics["tok_s_max"]
    assert metrics["tok_s"] > 0
    assert lines[:3] == [
        f"Benchmarking {server} ({api})",
        "  max_tokens=50, num_runs=3, warmup=1",
        "  Warmup 1/1 done (50 tokens)",
    ]
    assert lines[3].startswith("  Run 1/3: 50 tokens in ") and lines[3].endswith(" tok/s")
    assert lines[-2].startswith("  Overall tok/s: ")
    assert len(FakeInference.requests) == 4  # warmup + 3 runs, one at a time
    if api == "completions":
        assert FakeInference.requests[0]["model"] == "kimi-k2.5-int4"
        assert FakeInference.requests[0]["ignore_eos"] is True


def test_a_wrong_url_is_a_clear_error(server: str) -> None:
    with pytest.raises(EnvguardError, match="HTTP 404"):
        measure(
            server + "/nope",
            api="completions",
            max_tokens=5,
            runs=1,
            warmup=0,
            timeout=5,
            echo=lambda line: None,
        )
