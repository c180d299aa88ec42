"""Evaluate an observed process tree against a profile: every finding, in every process."""

from __future__ import annotations

from collections.abc import Iterator

from envguard.evaluation.findings import Draft, Finding, placed
from envguard.evaluation.rules import accepts, describe
from envguard.knowledge import nccl, servers
from envguard.knowledge.redaction import shown
from envguard.probes.observe import ENVIRON, Observation, ProcessObservation, Setting
from envguard.probes.process import access_hint
from envguard.profile.schema import Profile

# Present in real environments without being drift (NVIDIA container images set it).
NOT_DRIFT = frozenset({"NCCL_VERSION"})

SPT_HINT = (
    "start the server with SPT_NOENV=1 in its environment so setproctitle leaves the "
    "environment readable (envguard launch sets it), then check again"
)


def evaluate(profile: Profile, observation: Observation) -> list[Finding]:
    """All findings for the tree: per process, then across ranks, then vanished processes."""
    declared = profile.declared_names()
    findings: list[Finding] = []
    for proc in observation.processes:
        snap = proc.process
        drafts = [*_access_drafts(proc)]
        if proc.effective is not None:
            drafts += _environment_drafts(profile, proc, proc.effective, declared)
        findings += placed(drafts, snap.pid, snap.role)
    findings += _rank_disagreements(observation, declared)
    findings += [
        Finding(
            kind="unverifiable",
            subject="process",
            pid=pid,
            role=None,
            expected=None,
            actual="exited during the check",
            source=f"/proc/{pid}",
            hint="a worker exited while being read; check that the server is healthy and run "
            "the check again",
        )
        for pid in observation.vanished
    ]
    return findings


def _access_drafts(proc: ProcessObservation) -> Iterator[Draft]:
    """What keeps the environment NCCL will use from being seen."""
    snap = proc.process
    environ_path = f"/proc/{snap.pid}/environ"
    if snap.environ_state == "clobbered":
        yield Draft(
            kind="unverifiable",
            subject="environment",
            expected=None,
            actual="overwritten by setproctitle",
            source=environ_path,
            hint=SPT_HINT,
        )
    elif snap.environ_state == "empty":
        yield Draft(
            kind="unverifiable",
            subject="environment",
            expected=None,
            actual="reads back empty",
            source=environ_path,
            hint="either started with an empty environment or overwritten by setproctitle; "
            + SPT_HINT,
        )
    elif snap.environ_state == "denied":
        yield Draft(
            kind="unverifiable",
            subject="environment",
            expected=None,
            actual=f"not readable (uid {snap.uid})",
            source=environ_path,
            hint=access_hint(snap.uid),
        )
    for config in proc.config_files:
        if config.state in ("denied", "unreadable"):
            yield Draft(
                kind="unverifiable",
                subject=config.path,
                expected=None,
                actual=config.state,
                source=config.path,
                hint=f"NCCL reads this file but envguard cannot; run as root or as uid {snap.uid}",
            )
        for key, problem in config.problems:
            yield Draft(
                kind="misread",
                subject=key,
                expected=None,
                actual=None,
                source=config.path,
                hint=problem,
            )
    if proc.env_plugin is not None:
        yield Draft(
            kind="unverifiable",
            subject="NCCL environment",
            expected=None,
            actual=proc.env_plugin,
            source=None,
            hint="an NCCL env plugin answers every variable lookup, so the environment does "
            "not tell what NCCL uses; remove the plugin or set NCCL_ENV_PLUGIN=none",
        )


def _environment_drafts(
    profile: Profile,
    proc: ProcessObservation,
    effective: dict[str, Setting],
    declared: frozenset[str],
) -> Iterator[Draft]:
    env = profile.env
    searched = ", ".join([ENVIRON] + [c.path for c in proc.config_files if c.state == "read"])
    mismatched: set[str] = set()
    for name, rule in env.required.items():
        setting = effective.get(name)
        expected = describe(rule)
        if setting is None or (setting.value == "" and nccl.is_nccl_name(name)):
            empty = setting is not None
            yield Draft(
                kind="missing",
                subject=name,
                expected=_shown(name, expected, declared),
                actual="" if empty else None,
                source=searched,
                hint=f"set {name}={expected} in the server's environment (envguard "
                "launch injects the profile's values)"
                + ("; an empty value counts as unset for NCCL" if empty else ""),
            )
        elif not accepts(name, rule, setting.value):
            mismatched.add(name)
            yield Draft(
                kind="mismatch",
                subject=name,
                expected=_shown(name, expected, declared),
                actual=_shown(name, setting.value, declared),
                source=setting.source,
                hint=_misreading(name, setting.value) + _fix_hint(name, setting),
            )
    for name, rule in env.optional.items():
        setting = effective.get(name)
        if setting is not None and setting.value and not accepts(name, rule, setting.value):
            mismatched.add(name)
            yield Draft(
                kind="mismatch",
                subject=name,
                expected=_shown(name, describe(rule), declared) + " or unset",
                actual=_shown(name, setting.value, declared),
                source=setting.source,
                hint=_misreading(name, setting.value) + _fix_hint(name, setting),
            )
    for name in sorted(effective):
        yield from _presence_drafts(profile, name, effective[name], declared, mismatched)


def _presence_drafts(
    profile: Profile, name: str, setting: Setting, declared: frozenset[str], mismatched: set[str]
) -> Iterator[Draft]:
    """Findings about a variable being set at all, or set to something NCCL misreads."""
    if setting.value == "" and nccl.is_nccl_name(name):
        return  # NCCL treats an empty value as unset
    actual = _shown(name, setting.value, declared)
    if name in profile.env.forbidden:
        yield Draft(
            kind="forbidden",
            subject=name,
            expected="unset",
            actual=actual,
            source=setting.source,
            hint=f"remove {name}: " + _fix_hint(name, setting),
        )
        return
    guess = None if name in declared else nccl.suggest(name)
    if guess is not None:
        yield Draft(
            kind="misspelled",
            subject=name,
            expected=None,
            actual=actual,
            source=setting.source,
            hint=f"NCCL ignores {name} without a word; did you mean {guess}?",
        )
        return
    strict = [p for p in profile.env.strict_prefixes if name.startswith(p)]
    if strict and name not in declared and name not in NOT_DRIFT:
        yield Draft(
            kind="unexpected",
            subject=name,
            expected="unset",
            actual=actual,
            source=setting.source,
            hint=f"{name} is not in the profile and {strict[0]}* is strict: remove it, or add it "
            "to the profile and bump its version",
        )
    if name in nccl.TUNING_VARIABLES and name not in mismatched:
        problem = nccl.read(name, setting.value).problem
        if problem is not None:
            yield Draft(
                kind="misread",
                subject=name,
                expected=None,
                actual=actual,
                source=setting.source,
                hint=problem,
            )


def _shown(name: str, value: str, declared: frozenset[str]) -> str:
    return shown(name, value, declared) or ""


def _misreading(name: str, value: str) -> str:
    if name not in nccl.TUNING_VARIABLES:
        return ""
    problem = nccl.read(name, value).problem
    return f"{problem}; " if problem else ""


def _fix_hint(name: str, setting: Setting) -> str:
    if setting.source == ENVIRON:
        return f"fix {name} where the server is launched (envguard launch sets it from the profile)"
    return f"{name} comes from {setting.source}: edit or remove that line"


def _rank_disagreements(observation: Observation, declared: frozenset[str]) -> list[Finding]:
    """NCCL settings must be identical on every rank (NVIDIA/nccl#260, #394, #1136)."""
    ranks = [
        p
        for p in observation.processes
        if p.effective is not None and servers.is_rank(p.process.role)
    ]
    if len(ranks) < 2:
        return []
    names = {n for p in ranks for n in p.effective or {} if nccl.is_nccl_name(n) or n in declared}
    found = []
    for name in sorted(names - NOT_DRIFT):
        values = [(p, (p.effective or {}).get(name)) for p in ranks]
        if all(_same(name, values[0][1], other) for _, other in values[1:]):
            continue
        listing = ", ".join(
            f"{p.process.role}={'unset' if s is None else _shown(name, s.value, declared)}"
            for p, s in values
        )
        found.append(
            Finding(
                kind="inconsistent",
                subject=name,
                pid=None,
                role=None,
                expected="the same on every rank",
                actual=listing,
                source=None,
                hint="ranks with different NCCL settings hang or slow down "
                "(NVIDIA/nccl#394, #1136); find what sets it per worker",
            )
        )
    return found


def _same(name: str, left: Setting | None, right: Setting | None) -> bool:
    if left is None or right is None:
        return left is right
    return nccl.same_setting(name, left.value, right.value)
