"""Load a profile: parse TOML, check schema_version, validate, resolve `extends`, check meaning.

Every problem names the file and where in it: line and column for TOML syntax, the key
path (`env.required.NCCL_BUFFSIZE.min`) for schema errors, the chain for `extends` errors.
All problems of a file are collected before raising, so one run shows them all.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from envguard.errors import ProfileError
from envguard.files import read_regular
from envguard.profile.locate import locate
from envguard.profile.schema import SCHEMA_VERSION, Profile

MAX_EXTENDS_DEPTH = 32  # far beyond base -> family -> model; keeps recursion bounded
FORMAT_HINT = "see `envguard profile schema` and the README section 'Profiles'"


class LoadedProfile(NamedTuple):
    """A validated profile with `extends` resolved, and the files it came from."""

    profile: Profile
    path: str
    chain: tuple[str, ...]  # every file read, bases first, this file last
    digest: str  # sha256 over the bytes of every file in the chain

    @property
    def label(self) -> str:
        return f"{self.profile.name}@{self.profile.version}"


def load_profile(path: str | Path, *, use_cache: bool = True) -> LoadedProfile:
    """Load and validate the profile at `path` (or a profile name: envguard.profile.locate),
    raising ProfileError with every problem."""
    path = locate(path)
    _resolvable(path)
    if use_cache:
        from envguard.profile import cache

        cached = cache.get(Path(path))
        if cached is not None:
            return LoadedProfile(cached.profile, str(path), cached.chain, cached.digest)
    try:
        loaded = _load_uncached(Path(path))
    except RecursionError:
        raise ProfileError(
            f"{path}: nested too deeply to be a profile",
            hint="a profile is a few flat tables; check the file",
        ) from None
    if use_cache:
        cache.put(Path(path), cache.Cached(loaded.profile, loaded.chain, loaded.digest))
    return loaded


def _resolvable(path: Path) -> Path:
    """The absolute path, or a ProfileError for a symlink loop (Path.resolve raises
    RuntimeError for one on Python 3.11, OSError on 3.13)."""
    try:
        return path.resolve()
    except (RuntimeError, OSError) as exc:
        raise ProfileError(
            f"{path}: cannot resolve the path ({exc})",
            hint="a symbolic link points at itself or a loop of links: fix or remove it",
        ) from None


def _load_uncached(path: Path) -> LoadedProfile:
    documents: list[tuple[Path, dict[str, Any], bytes]] = []
    _collect(path, (), documents, set())
    problems: list[str] = []
    for doc_path, raw, _ in documents:
        problems += [f"{doc_path}: {p}" for p in _validate_document(raw)]
    if problems:
        raise ProfileError("\n".join(problems), hint=FORMAT_HINT)
    merged: dict[str, Any] = {}
    for _, raw, _ in documents:
        merged = _merge(merged, raw)
    merged["extends"] = []
    profile = _to_profile(merged)
    from envguard.profile import semantics

    problems = [f"{path}: {p}" for p in semantics.conflicts(profile)]
    if problems:
        raise ProfileError("\n".join(problems), hint=FORMAT_HINT)
    import hashlib  # only when validating: a cache hit carries the digest it computed

    digest = hashlib.sha256()
    for doc_path, _, data in documents:
        digest.update(str(doc_path.name).encode() + b"\0" + data + b"\0")
    return LoadedProfile(
        profile=profile,
        path=str(path),
        chain=tuple(str(p) for p, _, _ in documents),
        digest=digest.hexdigest(),
    )


def _collect(
    path: Path,
    stack: tuple[Path, ...],
    out: list[tuple[Path, dict[str, Any], bytes]],
    seen: set[Path],
) -> None:
    """Read `path` and its bases depth-first, bases before the file that extends them."""
    resolved = _resolvable(path)
    if len(stack) >= MAX_EXTENDS_DEPTH:
        raise ProfileError(
            f"{stack[0]}: extends is more than {MAX_EXTENDS_DEPTH} files deep (at {path})",
            hint="a hardware base and a model leaf need two or three levels; check the chain",
        )
    if resolved in stack:
        cycle = " -> ".join(str(p) for p in (*stack, resolved))
        raise ProfileError(
            f"{stack[0]}: extends forms a cycle: {cycle}",
            hint="remove one of the `extends` entries in the cycle",
        )
    data = _read_bytes(path, stack)
    raw = parse_toml(path, data)
    _check_schema_version(path, raw)
    extends = raw.get("extends", [])
    if isinstance(extends, list):
        for index, base in enumerate(extends):
            if not isinstance(base, str):
                continue  # reported by validation
            base_path = path.parent / base
            if not base_path.is_file():
                chain = " -> ".join(str(p) for p in (*stack, path))
                raise ProfileError(
                    f"{path}: extends[{index}]: {base!r} not found (looked for {base_path}; "
                    f"chain: {chain})",
                    hint="paths in `extends` are relative to the file that names them",
                )
            _collect(base_path, (*stack, resolved), out, seen)
    if resolved not in seen:
        seen.add(resolved)
        out.append((path, raw, data))


def _read_bytes(path: Path, stack: tuple[Path, ...]) -> bytes:
    try:
        return read_regular(path)
    except FileNotFoundError:
        raise ProfileError(
            f"{path}: no such profile file",
            hint="give the path of a .toml profile, e.g. profiles/demo.toml",
        ) from None
    except IsADirectoryError:
        raise ProfileError(
            f"{path}: is a directory, not a profile file", hint="give the path of a .toml profile"
        ) from None
    except PermissionError:
        raise ProfileError(
            f"{path}: permission denied reading the profile",
            hint="make the file readable by this user",
        ) from None
    except OSError as exc:
        raise ProfileError(f"{path}: cannot read: {exc.strerror}", hint="check the path") from None


def parse_toml(path: Path, data: bytes) -> dict[str, Any]:
    """Parse TOML bytes; syntax errors name the file, line and column (tomllib says where)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProfileError(
            f"{path}: not UTF-8 text (byte {exc.start})", hint="TOML files must be UTF-8"
        ) from None
    import tomllib  # not on the cached path: a cache hit parses no TOML

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(
            f"{path}: TOML syntax error: {exc}", hint="fix the TOML at that line and column"
        ) from None


def _check_schema_version(path: Path, raw: dict[str, Any]) -> None:
    """Checked before anything else, so a newer file gets one clear line, not a dozen."""
    version = raw.get("schema_version")
    if version is None:
        raise ProfileError(
            f"{path}: schema_version: missing",
            hint=f"add `schema_version = {SCHEMA_VERSION}` at the top of the file",
        )
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ProfileError(
            f"{path}: schema_version: must be a positive integer, got {version!r}",
            hint=f"write `schema_version = {SCHEMA_VERSION}`",
        )
    if version > SCHEMA_VERSION:
        raise ProfileError(
            f"{path}: this profile needs a newer envguard (profile format {version}; "
            f"this envguard reads format {SCHEMA_VERSION})",
            hint="upgrade envguard: pip install -U envguard",
        )


def _validate_document(raw: dict[str, Any]) -> list[str]:
    from envguard.profile import validation

    return validation.problems(raw)


def _to_profile(raw: dict[str, Any]) -> Profile:
    from envguard.profile import validation

    return validation.to_profile(raw)


_UNION_LISTS = ("forbidden", "strict_prefixes", "forbidden_flags", "forbidden_clock_events")
_RULE_TABLES = (("env", "required"), ("env", "optional"), ("server", "flags"))


def _merge(
    base: dict[str, Any], override: dict[str, Any], where: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Deep-merge `override` into `base`: tables merge, values replace, `forbidden` and
    `strict_prefixes` accumulate (a leaf cannot silently un-forbid what its base forbids).
    A rule is replaced whole: `{ max = 5 }` over `{ min = 1 }` means max 5 only."""
    merged = dict(base)
    for key, value in override.items():
        old = merged.get(key)
        if isinstance(old, dict) and isinstance(value, dict) and where not in _RULE_TABLES:
            merged[key] = _merge(old, value, (*where, key))
        elif key in _UNION_LISTS and isinstance(old, list) and isinstance(value, list):
            merged[key] = old + [v for v in value if v not in old]
        else:
            merged[key] = value
    return merged


class ValidationResult(NamedTuple):
    path: str
    label: str | None  # name@version when valid
    problems: tuple[str, ...]


def validate(paths: list[str]) -> list[ValidationResult]:
    """Validate every file fully (no cache); one result per file, every problem in it."""
    results = []
    for path in paths:
        try:
            loaded = load_profile(path, use_cache=False)
        except ProfileError as exc:
            results.append(ValidationResult(path, None, tuple(exc.message.splitlines())))
        else:
            results.append(ValidationResult(path, loaded.label, ()))
    return results
