"""Reading NCCL's own log: real lines recorded on a 2xH200 host (tests/data/nccl)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from envguard.errors import EnvguardError
from envguard.probes.nccl_log import read_nccl_log
from envguard.testing.tuned import TUNED_NCCL

DATA = Path(__file__).resolve().parent.parent / "data" / "nccl"
TUNED_LOG = DATA / "h200-2rank-tuned.log"
CONF_16M_LOG = DATA / "h200-2rank-conf-16M.log"

SIX = TUNED_NCCL  # the six tuned variables the recorded run was started with


def test_each_rank_reports_what_it_read() -> None:
    log = read_nccl_log(TUNED_LOG)
    assert [(p.host, p.pid, p.ranks, p.version) for p in log.processes] == [
        ("vm", 672, ((0, 2),), "2.28.9+cuda13.0"),
        ("vm", 673, ((1, 2),), "2.28.9+cuda13.0"),
    ]
    for process in log.processes:
        # The six, and the host's NCCL_NVLS_ENABLE=0; NCCL_PRTO (misspelled) has no line,
        # and neither has NCCL_DEBUG (the logger reads it before it logs).
        assert process.settings == {**SIX, "NCCL_NVLS_ENABLE": "0"}
    assert log.env_lines == 14


def test_a_config_file_value_and_16m_as_nccl_read_them() -> None:
    log = read_nccl_log(CONF_16M_LOG)
    for process in log.processes:
        assert process.settings == {
            "NCCL_P2P_LEVEL": "SYS",
            "NCCL_NVLS_ENABLE": "0",
            "NCCL_MAX_NCHANNELS": "8",  # from /etc/nccl.conf: "set by environment" too
            "NCCL_BUFFSIZE": "16",  # NCCL_BUFFSIZE=16M: 16 bytes
        }


def test_prefixes_and_other_lines_are_tolerated(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_bytes(
        b"INFO 11-30 09:05:36 [scheduler.py:1] Load weight begin\n"
        b"[rank0]: vm:9:9 [0] NCCL INFO NCCL_ALGO set by environment to Ring\r\n"
        b"Nov 30 09:05:36 host sglang[9]: vm:9:12 [0] NCCL INFO NCCL_BUFFSIZE set by "
        b"environment to 4194304.\n"
        b"vm:9:9 [0] NCCL INFO NCCL_BUFFSIZE set by environment to 1.\n"  # first line wins
        b"\xff\xfe not text at all\n"
        b"vm:9:9 [0] NCCL WARN NCCL_PROTO set by environment to LL\n"  # not INFO
    )
    [process] = read_nccl_log(log).processes
    assert process.settings == {"NCCL_ALGO": "Ring", "NCCL_BUFFSIZE": "4194304"}


def test_a_fifo_or_a_directory_is_refused_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in (fifo, tmp_path):
        with pytest.raises(EnvguardError, match="cannot read the NCCL log"):
            read_nccl_log(path)


def test_a_log_over_the_limit_is_refused_with_a_way_out(tmp_path: Path) -> None:
    huge = tmp_path / "huge.log"
    with huge.open("wb") as handle:
        handle.truncate((1 << 30) + 1)  # sparse: costs no disk
    with pytest.raises(EnvguardError) as caught:
        read_nccl_log(huge)
    assert "larger than 1 GiB" in caught.value.message
    assert "grep 'NCCL INFO'" in caught.value.hint
