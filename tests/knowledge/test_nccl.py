"""NCCL's parsing rules, checked against C's own strtoll and the reference's examples."""

from __future__ import annotations

import ctypes
import ctypes.util

import pytest
from hypothesis import given
from hypothesis import strategies as st

from envguard.knowledge import nccl

_libc = ctypes.CDLL(ctypes.util.find_library("c"))
_libc.strtoll.restype = ctypes.c_longlong
_libc.strtoll.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int]


def c_strtoll(text: str) -> tuple[int, str]:
    """The real strtoll(text, &end, 0) from the C library, as NCCL calls it."""
    raw = text.encode()
    buffer = ctypes.create_string_buffer(raw)
    end = ctypes.c_char_p()
    value = _libc.strtoll(buffer, ctypes.byref(end), 0)
    consumed = ctypes.cast(end, ctypes.c_void_p).value - ctypes.addressof(buffer)  # type: ignore[operator]
    return value, raw[consumed:].decode()


number_like = st.from_regex(r"\A[ \t]?[+-]?(0[xX]?)?[0-9a-fA-F]{0,12}[MKG ,.x]?\Z")


@given(number_like)
def test_strtoll_matches_the_c_library(text: str) -> None:
    value, rest = nccl.strtoll(text)
    c_value, c_rest = c_strtoll(text)
    assert (value if value is not None else 0) == c_value
    assert rest == c_rest


@pytest.mark.parametrize(
    ("raw", "value", "problem"),
    [
        ("16777216", 16777216, None),
        ("0x1000000", 16777216, None),
        ("010", 8, None),  # octal, as strtoll reads it
        ("4M", 4, "NCCL reads '4M' as 4 (trailing 'M' is dropped)"),
        ("1x", 1, "NCCL reads '1x' as 1 (trailing 'x' is dropped)"),
        ("true", 0, "'true' has no digits: NCCL reads it as 0"),
        ("", None, "an empty value counts as unset"),
        ("99999999999999999999", None, "'99999999999999999999' overflows: NCCL uses its default"),
    ],
)
def test_buffsize_is_read_like_nccl(raw: str, value: int | None, problem: str | None) -> None:
    assert nccl.read("NCCL_BUFFSIZE", raw) == nccl.Reading(value, problem)


@pytest.mark.parametrize(
    ("raw", "value"),
    [("SYS", "SYS"), ("PHB", "PHB"), ("0", "LOC"), ("1", "PIX"), ("3", "PHB"), ("7", "SYS")],
)
def test_p2p_level_names_and_legacy_integers(raw: str, value: str) -> None:
    assert nccl.read("NCCL_P2P_LEVEL", raw) == nccl.Reading(value)


def test_lowercase_p2p_level_is_ignored_by_nccl() -> None:
    reading = nccl.read("NCCL_P2P_LEVEL", "sys")
    assert reading.value is None
    assert reading.problem == (
        "NCCL matches level names case-sensitively: 'sys' is ignored; write SYS"
    )


def test_protocols_are_case_insensitive_and_per_collective() -> None:
    assert nccl.read("NCCL_PROTO", "ll,simple") == nccl.Reading("LL,Simple")
    assert nccl.read("NCCL_PROTO", "^LL128") == nccl.Reading("^LL128")
    assert nccl.read("NCCL_PROTO", "LL,Simple;allreduce:^LL") == nccl.Reading(
        "LL,Simple;AllReduce:^LL"
    )
    assert nccl.read("NCCL_ALGO", "allreduce:tree") == nccl.Reading("AllReduce:Tree")


def test_unknown_protocol_token_is_reported() -> None:
    reading = nccl.read("NCCL_PROTO", "LL,Fast")
    assert reading.problem is not None
    assert "unknown 'Fast' in NCCL_PROTO" in reading.problem
    assert "2.24+ fails setup" in reading.problem


@pytest.mark.parametrize(
    ("name", "raw", "value"),
    [
        ("NCCL_NTHREADS", "512", 512),
        ("NCCL_NTHREADS", "100", 512),  # not a multiple of 32
        ("NCCL_NTHREADS", "32", 64),  # clamped to 64..512
        ("NCCL_NTHREADS", "1024", 512),
        ("NCCL_MAX_NCHANNELS", "100", 64),  # clamped to 1..64
        ("NCCL_LAUNCH_MODE", "group", "GROUP"),
        ("NCCL_LAUNCH_MODE", "serial", "PARALLEL"),  # silently PARALLEL
        ("NCCL_DEBUG", "info", "INFO"),
    ],
)
def test_effective_values(name: str, raw: str, value: object) -> None:
    assert nccl.read(name, raw).value == value


def test_bool_variable_only_one_switches() -> None:
    assert nccl.read("NCCL_P2P_DISABLE", "1") == nccl.Reading(1)
    assert nccl.read("NCCL_P2P_DISABLE", "2").problem == (
        "NCCL_P2P_DISABLE expects 0 or 1; only 1 switches it"
    )


def test_misspelled_names_get_a_suggestion() -> None:
    assert nccl.suggest("NCCL_PRTO") == "NCCL_PROTO"
    assert nccl.suggest("NCCL_BUFSIZE") == "NCCL_BUFFSIZE"
    assert nccl.suggest("NCCL_IB_GDR_LEVEL") == "NCCL_NET_GDR_LEVEL"  # renamed in 2.4
    assert nccl.suggest("NCCL_PROTO") is None
    assert nccl.suggest("NCCL_SOMETHING_NEW_ENTIRELY") is None
    assert nccl.suggest("SGLANG_PRTO") is None


def test_same_setting_compares_as_nccl_reads() -> None:
    assert nccl.same_setting("NCCL_BUFFSIZE", "16777216", "0x1000000")
    assert nccl.same_setting("NCCL_PROTO", "ll", "LL")
    assert not nccl.same_setting("NCCL_P2P_LEVEL", "sys", "SYS")
    assert not nccl.same_setting("NCCL_BUFFSIZE", "16M", "16777216")
    assert not nccl.same_setting("SGLANG_X", "1", "01")
