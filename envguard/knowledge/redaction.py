"""What is a secret, and the one way envguard hides it in anything it prints or stores.

Two independent tests, both always applied (docs/secrets.md):
- by name: a variable, flag or header whose *name segments* say credential (`HF_TOKEN`,
  `VLLM_API_KEY`, `DB_PASS`, `--api-key`, `X-Api-Key`, `Authorization`). Segments, not
  substrings: `--max-total-tokens`, `--tokenizer` and `NCCL_IB_PKEY` are tuning, and a rule
  that hid them would also drop them from the fingerprint.
- by value: URL userinfo, PEM blocks, `Bearer`/`Basic` credentials, secret-named header
  lines and query parameters, and well-known token prefixes - whatever the name holding it.

Server flags are classified by the option they resolve to: both SGLang and vLLM accept
unambiguous abbreviations (argparse allow_abbrev), so `--api-k` *is* `--api-key`. The
options of every shipped catalog are classified by hand below; a test keeps that list
complete when a catalog is added.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from typing import Any

from envguard.knowledge.servers import SPT_NOENV
from envguard.knowledge.tuning import in_tuning_namespace

REDACTED = "<redacted>"
HIDDEN = "<hidden>"

# Set by envguard itself (launch), so never anybody's secret or private setting.
OWN_NAMES = frozenset({SPT_NOENV})

# --- by name ------------------------------------------------------------------------------

# A name is secret when one of its segments is one of these, wherever it stands.
_ANYWHERE = frozenset(
    {
        "SECRET",
        "SECRETS",
        "PASSWORD",
        "PASSWORDS",
        "PASSWD",
        "PASSPHRASE",
        "APIKEY",
        "PRIVATEKEY",
        "AUTHORIZATION",
    }
)
# ... or its last segment is one of these (`HF_TOKEN`, `DB_PASS`, `BASIC_AUTH`), while
# `HF_TOKEN_FILE` (a path to a secret) and `TOKENIZERS_PARALLELISM` are not.
_LAST = frozenset(
    {
        "TOKEN",
        "KEY",
        "PASS",
        "AUTH",
        "COOKIE",
        "CREDENTIAL",
        "CREDENTIALS",
        "CREDS",
        "SIGNATURE",
        "PRIVATE",
    }
)
# ... or two of its segments read as one of these words (`API_KEY_FILE`, `AWS_ACCESS_KEY_ID`).
_PAIRS = (("API", "KEY"), ("PRIVATE", "KEY"), ("ACCESS", "KEY"), ("AUTH", "TOKEN"))

# Words of a name in any style: HF_TOKEN, --api-key, X-Api-Key, apiKey, HFToken (digits
# are not words: TOKEN2 ends in TOKEN).
_SEGMENT = r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+"


@functools.lru_cache(maxsize=8192)
def looks_secret(name: str) -> bool:
    """Whether a variable, flag or header *name* says its value is a credential."""
    segments = [s.upper() for s in re.findall(_SEGMENT, name)]  # re caches the compiled form
    if not segments:
        return False
    if segments[-1] in _LAST or not _ANYWHERE.isdisjoint(segments):
        return True
    return any(
        first in segments and second in segments[segments.index(first) + 1 :]
        for first, second in _PAIRS
    )


# The options of the shipped catalogs (sglang 0.5.2/0.5.10/0.5.23, vllm 0.33.0) that hold a
# credential, by destination. Reviewed by hand; tests/knowledge/test_redaction.py fails when
# a catalog gains an option this list and the next one do not classify.
SECRET_OPTIONS = frozenset(
    {
        "api_key",  # sglang, vllm: the key clients must send
        "admin_api_key",  # sglang 0.5.10+: the admin endpoints' key
        "hf_token",  # vllm: Hugging Face token
        "ssl_keyfile_password",  # sglang 0.5.10+: unlocks the TLS key
    }
)
# Options the name rule would call secret that are tuning or plain settings (reviewed).
NOT_SECRET_OPTIONS = frozenset(
    {
        "bucket_time_to_first_token",  # histogram buckets (seconds)
        "kt_max_deferred_experts_per_token",  # an expert count
        "ssl_keyfile",  # a path to the key file, not the key
        "allow_credentials",  # a CORS switch
    }
)
# Long spellings of the secret options: an abbreviation of one of them is that option.
SECRET_OPTION_STRINGS = (
    "--api-key",
    "--admin-api-key",
    "--hf-token",
    "--ssl-keyfile-password",
)
# Full options of the catalogs that are also prefixes of a secret option: argparse takes an
# exact match first, so these are themselves and not an abbreviation of a secret.
EXACT_PREFIX_OPTIONS = frozenset({"--ssl-keyfile"})


def is_secret_option(dest: str) -> bool:
    """Whether a server option (by destination, e.g. `api_key`) holds a credential."""
    if dest in SECRET_OPTIONS:
        return True
    if dest in NOT_SECRET_OPTIONS:
        return False
    return looks_secret(dest)


def holds_secret(dest: str, value: Any) -> bool:
    """Whether a parsed server option's value is a credential: set on a secret option (unset,
    empty or a switch left off holds nothing), or anything in it secret by its shape."""
    if is_secret_option(dest) and value not in (None, "", [], False):
        return True
    return bool(redact_nested(value) != value)


def secret_flag(spelling: str) -> bool:
    """Whether a command-line flag as typed (`--api-k`, `--hf_token`) names a secret option:
    a secret long option, an abbreviation of one, or any secret-looking name."""
    if not spelling.startswith("-") or spelling in ("-", "--"):
        return False
    # vLLM reads `--hf_token` as `--hf-token` (FlexibleArgumentParser, vllm 0.33.0).
    normal = spelling.replace("_", "-") if spelling.startswith("--") else spelling
    if normal in EXACT_PREFIX_OPTIONS:
        return False
    if len(normal) > 2 and any(full.startswith(normal) for full in SECRET_OPTION_STRINGS):
        return True
    return is_secret_option(normal.lstrip("-").replace("-", "_"))


# --- by value -----------------------------------------------------------------------------

# Token formats documented by their issuers; each starts with a fixed prefix, so a tuning
# value does not look like one.
_TOKEN_PATTERNS = (
    r"hf_[A-Za-z0-9]{20,}",  # Hugging Face
    r"gh[pousr]_[A-Za-z0-9]{20,}",  # GitHub
    r"github_pat_[A-Za-z0-9_]{20,}",
    r"glpat-[A-Za-z0-9_-]{20,}",  # GitLab
    r"sk-[A-Za-z0-9_-]{20,}",  # OpenAI, Anthropic (sk-ant-), DeepSeek
    r"(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}",  # Stripe
    r"xox[abposr]-[A-Za-z0-9-]{10,}",  # Slack
    r"xapp-[A-Za-z0-9-]{10,}",
    r"(?:AKIA|ASIA)[A-Z0-9]{16}",  # AWS access key id
    r"AIza[0-9A-Za-z_-]{35}",  # Google API key
    r"ya29\.[0-9A-Za-z_-]{20,}",  # Google OAuth access token
    r"npm_[A-Za-z0-9]{36}",  # npm
    r"pypi-[A-Za-z0-9_-]{40,}",  # PyPI
    r"nvapi-[A-Za-z0-9_-]{20,}",  # NVIDIA NGC / API catalog
    r"gsk_[A-Za-z0-9]{20,}",  # Groq
    r"r8_[A-Za-z0-9]{20,}",  # Replicate
    r"SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}",  # SendGrid
    r"dop_v1_[a-f0-9]{40,}",  # DigitalOcean
    r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",  # a JWT
)


# Literal text each token format starts with: a value holding none of them is not scanned
# with the (costly to compile) token pattern at all.
_TOKEN_MARKS = ("hf_", "gh", "github_pat_", "glpat-", "sk-", "_live_", "_test_", "xox", "xapp-",
                "AKIA", "ASIA", "AIza", "ya29.", "npm_", "pypi-", "nvapi-", "gsk_", "r8_", "SG.",
                "dop_v1_", "eyJ")  # fmt: skip


@functools.cache
def _pattern(kind: str) -> re.Pattern[str]:
    """Compiled on first use: most values printed hold nothing that needs them."""
    if kind == "pem":  # a private key pasted into a variable, closed or cut off
        return re.compile(r"-----BEGIN [A-Z0-9 ]+-----.*?(?:-----END [A-Z0-9 ]+-----|\Z)", re.S)
    if kind == "userinfo":  # scheme://user:password@host, scheme://token@host
        return re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@?#]+@")
    if kind == "scheme":  # HTTP credentials, the scheme word kept
        return re.compile(r"(?i)\b(bearer|basic|token|digest)(\s+)[A-Za-z0-9._~+/=-]{6,}")
    return re.compile(r"(?<![A-Za-z0-9])(?:" + "|".join(_TOKEN_PATTERNS) + r")")


# `X-Api-Key: v`, `Authorization: v`; `?api_key=v&token=v` in a URL or a form.
_HEADER = r"(?m)^(\s*)([A-Za-z][A-Za-z0-9_-]*)(\s*:\s*)(\S.*)$"
_PARAMETER = r"([?&;]|^)([A-Za-z][A-Za-z0-9_.-]*)=([^&#;\s]*)"


def redact_value(value: str) -> str:
    """`value` with every secret-looking part replaced, whatever name holds it."""
    if not value:
        return value
    if "-----BEGIN " in value:
        value = _pattern("pem").sub(REDACTED, value)
    if "://" in value:
        value = _pattern("userinfo").sub(rf"\1{REDACTED}@", value)
    if " " in value or "\t" in value:
        value = _pattern("scheme").sub(rf"\1\2{REDACTED}", value)
    if any(mark in value for mark in _TOKEN_MARKS):
        value = _pattern("token").sub(REDACTED, value)
    if ":" in value:
        value = re.sub(_HEADER, _header_line, value)
    if "=" in value:
        value = re.sub(_PARAMETER, _parameter, value)
    return value


def redact_nested(value: Any) -> Any:
    """`value` with redact_value applied to every string inside it (lists, tuples and
    dicts walked; tuples come back as lists, as JSON has them)."""
    if isinstance(value, str):
        return redact_value(value)
    if isinstance(value, list | tuple):
        return [redact_nested(v) for v in value]
    if isinstance(value, dict):
        return {k: redact_nested(v) for k, v in value.items()}
    return value


def _header_line(match: re.Match[str]) -> str:
    lead, name, colon, rest = match.groups()
    if looks_secret(name) and rest != REDACTED:
        return f"{lead}{name}{colon}{REDACTED}"
    return match.group(0)


def _parameter(match: re.Match[str]) -> str:
    lead, name, value = match.groups()
    if value and value != REDACTED and looks_secret(name):
        return f"{lead}{name}={REDACTED}"
    return match.group(0)


# --- what may be shown --------------------------------------------------------------------


def shown(name: str, value: str | None, declared: frozenset[str] = frozenset()) -> str | None:
    """The value of variable `name` as it may appear in any output.

    Secret-looking names are redacted always; values outside the tuning namespaces and
    the profile's own names are hidden (they may hold anything: paths, hosts, tokens);
    secret-looking parts of any shown value are redacted. Control characters are escaped
    so that one value stays on one line.
    """
    if value is None:
        return None
    if looks_secret(name):
        return REDACTED
    if not (in_tuning_namespace(name) or name in declared or name in OWN_NAMES):
        return HIDDEN
    return escape(redact_value(value))


def escape(value: str) -> str:
    """Escape control characters (newlines, NUL) so a value prints on one line."""
    if value.isprintable():
        return value
    return value.encode("unicode_escape").decode("ascii")


def recorded(name: str, value: str) -> str:
    """A variable's value as stored (ledger, fingerprint): a secret's presence, never its
    value; every other value with its secret-looking parts redacted."""
    return REDACTED if looks_secret(name) else redact_value(value)


_ASSIGNMENT = r"[A-Za-z_][A-Za-z0-9_]*="


def redact_argv(argv: Sequence[str]) -> list[str]:
    """A command line safe to print or store.

    The value of a secret flag (by the option it resolves to: `--api-k X` is `--api-key X`)
    is redacted in both `--flag VALUE` and `--flag=VALUE` forms, `NAME=value` assignments
    before a command by their name, and every token by its value (`-H "Authorization:
    Bearer ..."`, `--url https://user:pass@host`).
    """
    out: list[str] = []
    hide_next = False
    for token in argv:
        if hide_next:
            out.append(REDACTED)
            hide_next = False
            continue
        if token.startswith("-"):
            flag, equals, value = token.partition("=")
            if secret_flag(flag):
                if equals:
                    out.append(f"{flag}={REDACTED}")
                else:
                    out.append(flag)
                    hide_next = True
                continue
            out.append(flag + equals + redact_value(value) if equals else redact_value(token))
        elif re.match(_ASSIGNMENT, token):
            name, _, value = token.partition("=")
            out.append(f"{name}={recorded(name, value)}")
        else:
            out.append(redact_value(token))
    return out


def redact_text(text: str, argv: Iterable[str] = ()) -> str:
    """Free text (a parser's error, a log line) that may quote `argv`: every token that
    redact_argv would hide is replaced wherever it appears, then values are redacted."""
    tokens = list(argv)
    for original, safe in zip(tokens, redact_argv(tokens), strict=True):
        if original != safe and len(original) >= 3:
            text = text.replace(original, safe)
    return redact_value(text)


def quoted(where: str, value: object) -> str:
    """`repr(value)` for a message about the key path `where` (`env.required.HF_TOKEN`):
    redacted when any key on the path names a secret."""
    if any(looks_secret(part) for part in re.split(r"[.\[\]]", where) if part):
        return REDACTED
    return redact_value(repr(value))
