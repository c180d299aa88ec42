"""watching.transitions: events only on a change; a restart with the same drift is silent."""

from __future__ import annotations

from typing import Any

from envguard.watching.transitions import Run, transitions

OK = Run("ok", (), ((100, 1),), "sha256:a", "")
DRIFT = Run("drift", ("missing NCCL_PROTO: LL -> None",), ((100, 1),), "sha256:b", "")
OTHER = Run("drift", ("missing NCCL_ALGO: Ring -> None",), ((100, 1),), "sha256:c", "")
GONE = Run("gone", (), (), None, "nothing is listening on TCP port 8000")


def state(run: Run, last_alert: float | None = None) -> dict[str, Any]:
    return {"status": run.status, "identity": run.identity, "processes": run.processes,
            "last_alert": last_alert}  # fmt: skip


def kinds(previous: dict[str, Any] | None, run: Run, remind: float | None = None) -> list[str]:
    return [e.kind for e in transitions(previous, run, now=1000.0, remind=remind)]


def test_nothing_while_nothing_changes() -> None:
    assert kinds(None, OK) == []
    assert kinds(state(OK), OK) == []
    assert kinds(state(DRIFT, 990), DRIFT) == []


def test_drift_appears_changes_and_resolves() -> None:
    assert kinds(state(OK), DRIFT) == ["drift_appeared"]
    assert kinds(None, DRIFT) == ["drift_appeared"]
    assert kinds(state(DRIFT), OTHER) == ["drift_changed"]
    assert kinds(state(DRIFT), OK) == ["drift_resolved"]


def test_gone_back_unverifiable() -> None:
    assert kinds(state(OK), GONE) == ["server_gone"]
    assert kinds(state(GONE), OK) == ["server_back"]
    blind = Run("unverifiable", ("unverifiable environment: None -> clobbered",), (), None, "x")
    assert kinds(state(OK), blind) == ["unverifiable"]


def test_a_restart_with_the_same_drift_is_the_same_drift() -> None:
    restarted = DRIFT._replace(processes=((200, 5),))
    assert kinds(state(DRIFT), restarted) == []
    assert kinds(state(OK), OK._replace(processes=((200, 5),))) == ["restarted"]


def test_reminders() -> None:
    assert kinds(state(DRIFT, last_alert=100.0), DRIFT, remind=600) == ["reminder"]
    assert kinds(state(DRIFT, last_alert=900.0), DRIFT, remind=600) == []
    assert kinds(state(OK, last_alert=100.0), OK, remind=600) == []
