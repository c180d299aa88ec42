"""The built-in throughput probe: how the 88.8 and 62.9 tok/s in the README were measured.

One request at a time, `max_tokens` tokens each, against an OpenAI-compatible
/v1/completions (SGLang and vLLM) or SGLang's native /generate; per-run and overall tok/s.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from envguard.errors import EnvguardError
from envguard.knowledge.redaction import redact_value

Api = Literal["completions", "generate"]
PROMPT = "Write a long, detailed story about a lighthouse keeper and the sea."


@dataclass(frozen=True)
class Run:
    tokens: int
    seconds: float

    @property
    def tok_s(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0


def _post(url: str, body: dict[str, Any], timeout: float) -> dict[str, Any]:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            data = json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        raise EnvguardError(
            f"{redact_value(url)}: HTTP {exc.code} {exc.reason}",
            hint="is this the server's base URL, and the right --api?",
        ) from None
    except (urllib.error.URLError, OSError) as exc:
        raise EnvguardError(
            f"{redact_value(url)}: no answer ({getattr(exc, 'reason', exc)})",
            hint="is the server up? envguard check --port PORT",
        ) from None
    except ValueError:
        raise EnvguardError(
            f"{redact_value(url)}: the answer is not JSON", hint="check --url and --api"
        ) from None
    if not isinstance(data, dict):
        raise EnvguardError(f"{redact_value(url)}: unexpected answer", hint="check --url and --api")
    return data


def model_name(base: str, timeout: float) -> str:
    """The first model the server lists (/v1/models), as /v1/completions wants one."""
    import urllib.request

    try:
        with urllib.request.urlopen(f"{base}/v1/models", timeout=timeout) as reply:
            data = json.loads(reply.read())
        return str(data["data"][0]["id"])
    except Exception:  # any server without the listing: it takes a placeholder name
        return "default"


def one_run(base: str, api: Api, max_tokens: int, model: str, timeout: float) -> Run:
    start = time.perf_counter()
    if api == "completions":
        body = {
            "model": model,
            "prompt": PROMPT,
            "max_tokens": max_tokens,
            "temperature": 0,
            "ignore_eos": True,
            "stream": False,
        }
        data = _post(f"{base}/v1/completions", body, timeout)
        tokens = (data.get("usage") or {}).get("completion_tokens")
    else:
        body = {
            "text": PROMPT,
            "sampling_params": {"max_new_tokens": max_tokens, "temperature": 0, "ignore_eos": True},
        }
        data = _post(f"{base}/generate", body, timeout)
        tokens = (data.get("meta_info") or {}).get("completion_tokens")
    elapsed = time.perf_counter() - start
    if not isinstance(tokens, int):
        raise EnvguardError(
            f"{redact_value(base)}: the answer does not say how many tokens it generated",
            hint="use --api generate for SGLang's native API",
        )
    return Run(tokens, elapsed)


def measure(
    base: str,
    *,
    api: Api,
    max_tokens: int,
    runs: int,
    warmup: int,
    timeout: float,
    echo: Callable[[str], None],
) -> dict[str, float]:
    base = base.rstrip("/")
    model = model_name(base, timeout) if api == "completions" else "default"
    echo(f"Benchmarking {redact_value(base)} ({api})")
    echo(f"  max_tokens={max_tokens}, num_runs={runs}, warmup={warmup}")
    for index in range(warmup):
        run = one_run(base, api, max_tokens, model, timeout)
        echo(f"  Warmup {index + 1}/{warmup} done ({run.tokens} tokens)")
    measured = []
    for index in range(runs):
        run = one_run(base, api, max_tokens, model, timeout)
        measured.append(run)
        echo(
            f"  Run {index + 1}/{runs}: {run.tokens} tokens in {run.seconds:.2f}s = "
            f"{run.tok_s:.1f} tok/s"
        )
    tokens = sum(r.tokens for r in measured)
    seconds = sum(r.seconds for r in measured)
    rates = [r.tok_s for r in measured]
    metrics = {
        "tok_s": tokens / seconds if seconds else 0.0,
        "tok_s_mean": sum(rates) / len(rates),
        "tok_s_min": min(rates),
        "tok_s_max": max(rates),
        "tokens": float(tokens),
        "runs": float(runs),
    }
    echo(f"  Overall tok/s: {metrics['tok_s']:.1f}")
    echo(f"  Avg tok/s:     {metrics['tok_s_mean']:.1f}")
    return metrics
