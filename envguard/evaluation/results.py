"""Benchmark results as recorded, and whether two of them may be compared: metric deltas,
and the setup diff (deepdiff) that decides whether the comparison means anything. Pure: the
SQLite file that keeps records is envguard.ledger.store.

Two results are comparable only when both are valid and their setups differ in nothing but
what the user names as the experiment (`--vary NCCL_ALGO`). The mistake this prevents was
made for real: a speculative-decoding run at 75.9 tok/s "beat" a 62.9 tok/s baseline that had
lost its NCCL tuning; re-measured on the tuned setup (88.8 tok/s), it was 16% slower.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from envguard.evaluation.record import Record


@dataclass(frozen=True)
class MetricDelta:
    name: str
    before: float | None
    after: float | None

    @property
    def delta(self) -> float | None:
        if self.before is None or self.after is None:
            return None
        return self.after - self.before

    @property
    def percent(self) -> float | None:
        if self.delta is None or not self.before:
            return None
        return 100.0 * self.delta / abs(self.before)


@dataclass(frozen=True)
class SetupDifference:
    path: tuple[str, ...]  # ("env", "NCCL_ALGO")
    before: Any  # MISSING when absent
    after: Any
    varied: bool  # named by --vary: the experiment itself

    @property
    def name(self) -> str:
        return ".".join(self.path)


MISSING = "<absent>"


@dataclass(frozen=True)
class Comparison:
    before: Record
    after: Record
    metrics: list[MetricDelta]
    differences: list[SetupDifference]
    refusals: list[str] = field(default_factory=list)

    @property
    def comparable(self) -> bool:
        return not self.refusals


def _normal(name: str) -> str:
    return name.lstrip("-").replace("-", "_").lower()


def _is_varied(path: tuple[str, ...], vary: list[str]) -> bool:
    if len(path) < 2:
        return False
    wanted = {_normal(v) for v in vary}
    return _normal(path[1]) in wanted or _normal(".".join(path)) in wanted


def _by_setting(setup: dict[str, Any]) -> dict[str, Any]:
    """{"env": {"NCCL_ALGO": "Ring"}} -> {"env.NCCL_ALGO": "Ring"}: one entry per setting, so
    a setting absent on one side is reported as itself, not as a whole section."""
    flat: dict[str, Any] = {}
    for section, values in setup.items():
        if isinstance(values, dict):
            flat.update({f"{section}.{key}": value for key, value in values.items()})
        else:
            flat[section] = values
    return flat


def setup_differences(
    before: dict[str, Any], after: dict[str, Any], vary: list[str]
) -> list[SetupDifference]:
    """Every setting where the setups differ. Scalars are compared directly; a setting whose
    value is structured on both sides (a JSON flag such as --speculative-config) is diffed
    with deepdiff, down to the changed key. deepdiff is imported only then (~75 ms)."""
    old, new = _by_setting(before), _by_setting(after)
    found = []
    for setting in sorted(set(old) | set(new)):
        a, b = old.get(setting, MISSING), new.get(setting, MISSING)
        if a == b and type(a) is type(b):
            continue
        path = tuple(setting.split(".", 1))
        if isinstance(a, dict | list) and isinstance(b, dict | list):
            found += _structured(path, a, b, _is_varied(path, vary))
        else:
            found.append(SetupDifference(path, a, b, _is_varied(path, vary)))
    return found


def _structured(path: tuple[str, ...], a: Any, b: Any, varied: bool) -> list[SetupDifference]:
    from deepdiff import DeepDiff

    # threshold_to_diff_deeper=0: deepdiff 8 otherwise reports two mostly different values
    # as one changed value, which would hide which keys differ.
    tree = DeepDiff(a, b, ignore_order=True, view="tree", threshold_to_diff_deeper=0)
    found = []
    for kind, levels in tree.items():
        for level in levels:
            inner = tuple(str(p) for p in level.path(output_format="list"))
            old = MISSING if "added" in kind else level.t1
            new = MISSING if "removed" in kind else level.t2
            found.append(SetupDifference((*path, *inner), old, new, varied))
    return sorted(found, key=lambda d: d.path)


def compare(before: Record, after: Record, vary: list[str] | None = None) -> Comparison:
    vary = vary or []
    refusals = []
    for label, record in (("A", before), ("B", after)):
        if record.verdict != "valid":
            reasons = "; ".join(record.reasons) or "no reason recorded"
            refusals.append(f"#{record.id} ({label}) is not a valid result: {reasons}")
        elif record.setup is None:
            refusals.append(f"#{record.id} ({label}) has no recorded setup")
    differences: list[SetupDifference] = []
    if (
        before.setup is not None
        and after.setup is not None
        and before.fingerprint != after.fingerprint
    ):
        differences = setup_differences(before.setup, after.setup, vary)
        unvaried = [d.name for d in differences if not d.varied]
        if unvaried:
            refusals.append(
                f"the setups differ in {', '.join(unvaried)}, which --vary does not name: "
                "the difference in results could come from any of them"
            )
    names = list(dict.fromkeys([*before.metrics, *after.metrics]))
    metrics = [MetricDelta(n, before.metrics.get(n), after.metrics.get(n)) for n in names]
    return Comparison(before, after, metrics, differences, refusals)
