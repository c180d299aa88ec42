"""NVML read beside a check, in a forked child (or a thread), handed back as JSON."""

from __future__ import annotations

import json
import os
import threading
from typing import Any

from envguard.probes.gpu.facts import ALL_FACTS, GpuFacts, GpuObservation, GpuUnavailable, HostGpus
from envguard.probes.gpu.nvml import load_nvml, read_host
from envguard.probes.gpu.visible import seen_by


class GpuReading:
    """NVML started and every GPU of the host read beside the rest of a check (reading
    /proc, parsing flags, asking the server), in a child process of its own.

    Starting NVML is the cost of a [gpu] check: on an H200 host, importing pynvml ~15 ms,
    nvmlInit ~14 ms, the first query of each GPU ~7 ms, the facts ~8 ms more (docs/gpu.md).
    A thread would share the interpreter's lock with the check; a forked child runs on
    another core and hands back the facts as JSON through a pipe. Where this process
    already runs other threads (forking would copy their locks mid-use), a thread it is.
    """

    def __init__(self, *, wanted: frozenset[str] = ALL_FACTS, fork: bool | None = None) -> None:
        self.wanted = wanted
        self._result: HostGpus | BaseException | None = None
        self._child: tuple[int, int] | None = None  # (pid, read end of the pipe)
        self._thread: threading.Thread | None = None
        if fork if fork is not None else threading.active_count() == 1:
            self._fork()
        else:
            self._thread = threading.Thread(target=self._in_thread, daemon=True)
            self._thread.start()

    def _in_thread(self) -> None:
        try:
            self._result = read_host(load_nvml(), wanted=self.wanted)
        except BaseException as exc:  # raised again in the caller's thread, by observe()
            self._result = exc

    def _fork(self) -> None:
        readable, writable = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: read, report, and leave without running any exit code
            try:
                os.close(readable)
                self._report(writable)
            finally:
                os._exit(0)  # whatever happened (a closed pipe, a Ctrl-C): never go on
        os.close(writable)
        self._child = (pid, readable)

    def _report(self, writable: int) -> None:
        answer: dict[str, Any]
        try:
            answer = {"host": _host_data(read_host(load_nvml(), wanted=self.wanted))}
        except GpuUnavailable as exc:
            answer = {"unavailable": [exc.message, exc.hint]}
        except BaseException as exc:
            answer = {"failed": f"{type(exc).__name__}: {exc}"}
        data = json.dumps(answer).encode()
        while data:
            data = data[os.write(writable, data) :]

    def observe(self, visible: str | None) -> GpuObservation:
        """The GPUs a process with CUDA_VISIBLE_DEVICES=`visible` sees; GpuUnavailable as
        load_nvml and read_host raise it."""
        self._collect()
        if isinstance(self._result, BaseException):
            raise self._result
        assert self._result is not None
        return seen_by(self._result, visible)

    def close(self) -> None:
        """Reap the child if observe() never did (a check that failed on the way)."""
        self._collect()

    def _collect(self) -> None:
        if self._thread is not None:
            self._thread.join()
        if self._child is None:
            return
        pid, readable = self._child
        self._child = None
        with os.fdopen(readable, "rb") as pipe:
            data = pipe.read()
        os.waitpid(pid, 0)
        try:
            answer = json.loads(data)
        except ValueError:
            answer = {"failed": "the NVML reader died"}
        if "host" in answer:
            self._result = _host_from(answer["host"])
        elif "unavailable" in answer:
            self._result = GpuUnavailable(*answer["unavailable"])
        else:
            self._result = GpuUnavailable(
                f"cannot verify GPUs: {answer['failed']}",
                hint="nvidia-smi tells whether the driver answers",
            )


def _host_data(host: HostGpus) -> dict[str, Any]:
    return {
        "driver": host.driver,
        "cuda_driver": host.cuda_driver,
        "facts": [gpu._asdict() for gpu in host.facts],
        "mig_devices": [list(m) for m in host.mig_devices],
    }


def _host_from(data: dict[str, Any]) -> HostGpus:
    def gpu(fields: dict[str, Any]) -> GpuFacts:
        events = fields["clock_events"]
        return GpuFacts(
            **{
                **fields,
                "clock_events": tuple(events) if events is not None else None,
                "errors": tuple(tuple(e) for e in fields["errors"]),
            }
        )

    return HostGpus(
        driver=data["driver"],
        cuda_driver=data["cuda_driver"],
        facts=tuple(gpu(f) for f in data["facts"]),
        mig_devices=tuple(tuple(m) for m in data["mig_devices"]),
    )
