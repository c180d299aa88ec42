"""Text output for people: findings grouped by process, identical groups merged."""

from __future__ import annotations

from typing import TYPE_CHECKING

from envguard.evaluation.findings import Finding
from envguard.knowledge.gpu import NVML
from envguard.render.style import style

if TYPE_CHECKING:
    from envguard.evaluation.report import CheckReport
    from envguard.probes.gpu import GpuObservation

GPUS_SKIPPED = "GPUs not checked (--skip-gpu): the profile's [gpu] part is unverified"
_VERDICT_STYLE = {"ok": "green", "drift": "red", "unverifiable": "yellow"}
_KIND_STYLE = {"unverifiable": "yellow"}


def finding_lines(finding: Finding) -> list[str]:
    parts = []
    if finding.expected is not None:
        parts.append(f"expected {finding.expected}")
    if finding.actual is not None:
        parts.append(
            f"found {finding.actual!r}" if finding.kind != "unverifiable" else finding.actual
        )
    elif finding.kind == "missing":
        parts.append("not set")
    detail = ", ".join(parts)
    source = f" [{finding.source}]" if finding.source else ""
    kind = style(f"{finding.kind:<12}", fg=_KIND_STYLE.get(finding.kind, "red"))
    return [
        f"  {kind} {finding.subject}" + (f": {detail}" if detail else "") + source,
        f"               hint: {finding.hint}",
    ]


def check_text(report: CheckReport, *, quiet: bool = False) -> str:
    verdict = report.verdict
    nprocs = len(report.processes)
    drift = sum(f.is_drift for f in report.findings)
    summary = {
        "ok": f"{nprocs} processes match {report.profile.label}",
        "drift": f"{drift} findings in {nprocs} processes differ from {report.profile.label}",
        "unverifiable": "part of the setup could not be verified; nothing found differs",
    }[verdict]
    last = style(f"verdict: {verdict}", fg=_VERDICT_STYLE[verdict], bold=True)
    last += f" - {summary} (exit {int(report.exit_code)})"
    if quiet:
        return last

    lines = [
        f"envguard check: profile {report.profile.label} ({report.profile.path}), "
        f"{report.target.describe()}, {nprocs} processes"
    ]
    lines += _launch_lines(report)
    lines += _gpu_lines(report)
    if report.nccl_log is not None:
        log = report.nccl_log
        versions = sorted({p.version for p in log.processes if p.version})
        lines.append(
            f"nccl log: {log.path}: {len(log.processes)} processes, {log.env_lines} settings "
            f"reported" + (f" (NCCL {', '.join(versions)})" if versions else "")
        )
    # Group by process; processes with identical findings share one block, so eight
    # schedulers missing the same variable read as one block, not eight.
    blocks: dict[tuple[tuple[str, ...], ...], list[str]] = {}
    clean: list[str] = []
    for proc in report.processes:
        pid = proc.process.pid
        own = [f for f in report.findings if f.pid == pid]
        label = f"{proc.process.role} ({pid})"
        if not own:
            clean.append(label)
            continue
        key = tuple(tuple(finding_lines(f)) for f in own)
        blocks.setdefault(key, []).append(label)
    for key, labels in blocks.items():
        lines.append("")
        lines.append(style(", ".join(labels), bold=True) + ":")
        lines += [line for finding in key for line in finding]
    pids = {p.process.pid for p in report.processes}
    gpu = [f for f in report.findings if f.pid is None and _about_gpus(f)]
    server_wide = [f for f in report.findings if f.pid not in pids and f not in gpu]
    if server_wide:
        lines += ["", style("across processes", bold=True) + ":"]
        lines += [line for f in server_wide for line in finding_lines(f)]
    if gpu:
        lines += ["", style("GPUs", bold=True) + ":"]
        lines += [line for f in gpu for line in finding_lines(f)]
    if clean:
        lines += ["", "ok: " + ", ".join(clean)]
    if report.gpu_skipped:
        lines += ["", f"note: {GPUS_SKIPPED}"]
    if report.zombies:
        lines += [
            "",
            f"note: {len(report.zombies)} zombie processes ({', '.join(map(str, report.zombies))}):"
            " exited and not yet reaped by their parent; nothing left in them to check",
        ]
    lines += ["", last]
    return "\n".join(lines)


def _about_gpus(finding: Finding) -> bool:
    return finding.source == NVML


def _gpu_lines(report: CheckReport) -> list[str]:
    lines = []
    for seen in report.gpus:
        lines.append(gpu_summary(seen))
        lines += [f"note: {note}" for note in seen.notes]
    return lines


def gpu_summary(seen: GpuObservation) -> str:
    """One line on the GPUs a server sees (check's output, launch's preflight)."""
    names = ", ".join(sorted({g.name for g in seen.gpus})) or "none"
    visible = "" if seen.visible is None else f", CUDA_VISIBLE_DEVICES={seen.visible}"
    return (
        f"gpus: {len(seen.gpus)} of {seen.host_count} ({names}){visible}; "
        f"driver {seen.driver}, CUDA {seen.cuda_driver or 'unknown'}"
    )


def _launch_lines(report: CheckReport) -> list[str]:
    lines = []
    for observed in report.launches:
        if observed.launch is not None and observed.catalog is not None:
            installed = observed.installed
            found = f"{installed.version} ({installed.where})" if installed else "version not found"
            lines.append(
                f"launch: {observed.launch.program} (pid {observed.pid}), installed "
                f"{observed.launch.server} {found}, flags read with {observed.catalog.label}; "
                f"/server_info {observed.server_info_state}"
            )
        if observed.catalog_note:
            lines.append(f"note: {observed.catalog_note}")
    return lines
