"""NCCL's variables and how NCCL itself parses their values.

Every rule here is a fact from docs/nccl.md (NVIDIA/nccl v2.23-v2.30 sources,
its environment-variable docs, one run on an H200 with NCCL 2.28.9). Do not guess past them.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

VarKind = Literal["int", "bool", "level", "list", "enum", "string"]

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_DEC, _OCT, _HEX = "0123456789", "01234567", "0123456789abcdefABCDEF"


class NcclVar(NamedTuple):
    name: str
    kind: VarKind
    # Legal values: tokens for list/enum/level, allowed integers for small int ranges.
    choices: tuple[str, ...] = ()
    int_range: tuple[int, int] | None = None


_LEVELS = ("LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS")
# Legacy integer levels: 0 LOC, 1 PIX, 2 PXB, 3 PHB, >=4 SYS (reference: NCCL_P2P_LEVEL row).
_LEGACY_LEVELS = ("LOC", "PIX", "PXB", "PHB", "SYS")
_PROTOCOLS = ("LL", "LL128", "Simple")
_ALGORITHMS = ("Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT")
# Per-collective prefixes accepted since 2.24 (`LL,Simple;allreduce:^LL`).
COLLECTIVES = ("Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce")
_SUBSYSTEMS = (
    "INIT",
    "COLL",
    "P2P",
    "SHM",
    "NET",
    "GRAPH",
    "TUNING",
    "ENV",
    "ALLOC",
    "CALL",
    "PROXY",
    "NVLS",
    "BOOTSTRAP",
    "REG",
    "PROFILE",
    "RAS",
    "ALL",
)

TUNING_VARIABLES: dict[str, NcclVar] = {
    v.name: v
    for v in (
        NcclVar("NCCL_PROTO", "list", _PROTOCOLS),
        NcclVar("NCCL_ALGO", "list", _ALGORITHMS),
        NcclVar("NCCL_P2P_LEVEL", "level", _LEVELS),
        NcclVar("NCCL_NET_GDR_LEVEL", "level", _LEVELS),
        NcclVar("NCCL_P2P_DISABLE", "bool"),
        NcclVar("NCCL_SHM_DISABLE", "bool"),
        NcclVar("NCCL_IB_DISABLE", "bool"),
        NcclVar("NCCL_MAX_NCHANNELS", "int", int_range=(1, 64)),
        NcclVar("NCCL_MIN_NCHANNELS", "int", int_range=(1, 64)),
        NcclVar("NCCL_MAX_NRINGS", "int", int_range=(1, 64)),
        NcclVar("NCCL_MIN_NRINGS", "int", int_range=(1, 64)),
        NcclVar("NCCL_MAX_CTAS", "int"),
        NcclVar("NCCL_MIN_CTAS", "int"),
        NcclVar("NCCL_BUFFSIZE", "int"),
        NcclVar("NCCL_NTHREADS", "int"),
        NcclVar("NCCL_CROSS_NIC", "int", ("0", "1", "2")),
        NcclVar("NCCL_CUMEM_ENABLE", "int", ("0", "1")),
        NcclVar("NCCL_NVLS_ENABLE", "int", ("0", "1", "2")),
        NcclVar("NCCL_LAUNCH_MODE", "enum", ("PARALLEL", "GROUP")),
        NcclVar("NCCL_DEBUG", "enum", ("VERSION", "WARN", "INFO", "ABORT", "TRACE")),
        NcclVar("NCCL_DEBUG_SUBSYS", "list", _SUBSYSTEMS),
        NcclVar("NCCL_SOCKET_IFNAME", "string"),
        NcclVar("NCCL_IB_HCA", "string"),
        NcclVar("NCCL_TOPO_FILE", "string"),
        NcclVar("NCCL_GRAPH_FILE", "string"),
        NcclVar("NCCL_TUNER_PLUGIN", "string"),
        NcclVar("NCCL_NET_PLUGIN", "string"),
        NcclVar("NCCL_ENV_PLUGIN", "string"),
    )
}

# Other names NCCL reads (NCCL_PARAM declarations in NVIDIA/nccl src/, e.g. init.cc and
# transport/net_ib), so that a close misspelling of one can be told apart from a variable NCCL
# knows. Not tuning variables for envguard's purposes.
OTHER_KNOWN_NAMES = frozenset(
    {
        "NCCL_VERSION",  # set by NVIDIA container images; not read by NCCL, not drift
        "NCCL_CONF_FILE",
        "NCCL_DEBUG_FILE",
        "NCCL_NVLS_NCHANNELS",
        "NCCL_WIN_ENABLE",
        "NCCL_IB_DATA_DIRECT",
        "NCCL_SET_CPU_STACK_SIZE",
        "NCCL_GROUP_CUDA_STREAM",
        "NCCL_NUM_RMA_CTX",
        "NCCL_NET",
        "NCCL_COLLNET_ENABLE",
        "NCCL_IB_TIMEOUT",
        "NCCL_IB_RETRY_CNT",
        "NCCL_IB_GID_INDEX",
        "NCCL_IB_SL",
        "NCCL_IB_TC",
        "NCCL_IB_QPS_PER_CONNECTION",
        "NCCL_IB_ADAPTIVE_ROUTING",
        "NCCL_IB_PCI_RELAXED_ORDERING",
        "NCCL_IB_SPLIT_DATA_ON_QPS",
        "NCCL_IB_MERGE_NICS",
        "NCCL_IB_ROCE_VERSION_NUM",
        "NCCL_SOCKET_NTHREADS",
        "NCCL_NSOCKS_PERTHREAD",
        "NCCL_NET_GDR_READ",
        "NCCL_NET_SHARED_BUFFERS",
        "NCCL_NET_SHARED_COMMS",
        "NCCL_P2P_NET_CHUNKSIZE",
        "NCCL_P2P_NVL_CHUNKSIZE",
        "NCCL_P2P_PCI_CHUNKSIZE",
        "NCCL_P2P_PXN_LEVEL",
        "NCCL_PXN_DISABLE",
        "NCCL_NVB_DISABLE",
        "NCCL_MNNVL_ENABLE",
        "NCCL_GRAPH_REGISTER",
        "NCCL_LOCAL_REGISTER",
        "NCCL_IGNORE_CPU_AFFINITY",
        "NCCL_TOPO_DUMP_FILE",
        "NCCL_PROFILER_PLUGIN",
        "NCCL_RAS_ENABLE",
        "NCCL_RUNTIME_CONNECT",
        "NCCL_SET_THREAD_NAME",
        "NCCL_COMM_BLOCKING",
        "NCCL_CGA_CLUSTER_SIZE",
        "NCCL_NVLS_CHUNKSIZE",
        "NCCL_MAX_P2P_NCHANNELS",
        "NCCL_MIN_P2P_NCHANNELS",
        "NCCL_NCHANNELS_PER_NET_PEER",
        "NCCL_WORK_FIFO_DEPTH",
        "NCCL_CHECK_POINTERS",
        "NCCL_SHM_USE_CUDA_MEMCPY",
        "NCCL_P2P_USE_CUDA_MEMCPY",
        "NCCL_IB_USE_INLINE",
    }
)

# Old names NCCL no longer reads at all: setting them does nothing.
RENAMED = {"NCCL_IB_GDR_LEVEL": "NCCL_NET_GDR_LEVEL"}  # renamed in 2.4

KNOWN_NAMES = frozenset(TUNING_VARIABLES) | OTHER_KNOWN_NAMES

# What NCCL_DEBUG=INFO logs ("NAME set by environment to VALUE", docs/nccl.md). The logger's
# own variables are read before anything is logged, so they never get a line; NCCL_PROTO and
# NCCL_ALGO are logged only when a communicator of several ranks tunes its algorithms.
NOT_LOGGED = frozenset({"NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE"})
LOGGED_WHEN_TUNING = frozenset({"NCCL_PROTO", "NCCL_ALGO"})

ENV_PLUGIN_VARIABLE = "NCCL_ENV_PLUGIN"
ENV_PLUGIN_LIBRARY = "libnccl-env.so"  # loaded by NCCL 2.28+ when present


class Reading(NamedTuple):
    """What NCCL makes of one raw value.

    `value` is the normalised effective setting (None: NCCL ignores it and uses its
    default); `problem` says how NCCL reads it differently from how it looks.
    """

    value: str | int | None
    problem: str | None = None


def strtoll(text: str) -> tuple[int | None, str]:
    """Parse like C `strtoll(text, &end, 0)`: return the value and the unparsed rest.

    The value is None when no digits were read (C returns 0 then). Decimal, `0x` hex and
    `0`-prefixed octal are accepted; trailing characters are left in the rest.
    """
    s = text.lstrip(" \t\n\v\f\r")
    i, sign = 0, 1
    if s[:1] in ("+", "-"):
        sign = -1 if s[0] == "-" else 1
        i = 1
    if s[i : i + 2] in ("0x", "0X") and s[i + 2 : i + 3] in tuple(_HEX):
        base, digits, i = 16, _HEX, i + 2
    elif s[i : i + 1] == "0":
        base, digits = 8, _OCT
    else:
        base, digits = 10, _DEC
    end = i
    while end < len(s) and s[end] in digits:
        end += 1
    if end == i:
        return None, text
    return sign * int(s[i:end], base), s[end:]


def read_int(raw: str) -> Reading:
    """An integer setting read the NCCL way: strtoll, trailing characters silently dropped."""
    value, rest = strtoll(raw)
    if value is None:
        return Reading(0, f"{raw!r} has no digits: NCCL reads it as 0")
    if not INT64_MIN <= value <= INT64_MAX:
        return Reading(None, f"{raw!r} overflows: NCCL uses its default")
    if rest:
        return Reading(value, f"NCCL reads {raw!r} as {value} (trailing {rest!r} is dropped)")
    return Reading(value)


def read(name: str, raw: str) -> Reading:
    """The effective setting NCCL derives from `raw` for variable `name`."""
    if raw == "":
        return Reading(None, "an empty value counts as unset")
    var = TUNING_VARIABLES.get(name)
    if var is None:
        return Reading(raw)
    if var.kind in ("int", "bool"):
        return _read_number(var, raw)
    if var.kind == "level":
        return _read_level(raw)
    if var.kind == "enum":
        return _read_enum(var, raw)
    if var.kind == "list":
        return _read_list(var, raw)
    return Reading(raw)


def _read_number(var: NcclVar, raw: str) -> Reading:
    reading = read_int(raw)
    value = reading.value
    if not isinstance(value, int) or reading.problem:
        return reading
    if var.kind == "bool" and value not in (0, 1):
        return Reading(value, f"{var.name} expects 0 or 1; only 1 switches it")
    if var.choices and str(value) not in var.choices:
        return Reading(value, f"{var.name} accepts {', '.join(var.choices)}")
    if var.int_range and not var.int_range[0] <= value <= var.int_range[1]:
        low, high = var.int_range
        clamped = min(max(value, low), high)
        return Reading(
            clamped, f"NCCL clamps {var.name} to {low}-{high}: {value} acts as {clamped}"
        )
    if var.name == "NCCL_NTHREADS":
        # A non-multiple of 32 becomes 512; the rest are clamped to 64-512.
        effective = 512 if value % 32 else min(max(value, 64), 512)
        if effective != value:
            return Reading(effective, f"NCCL uses {effective} threads for NCCL_NTHREADS={value}")
    return Reading(value)


def _read_level(raw: str) -> Reading:
    if raw in _LEVELS:
        return Reading(raw)
    number, rest = strtoll(raw)
    if number is not None and not rest and number >= 0:
        return Reading(_LEGACY_LEVELS[min(number, 4)])
    if raw.upper() in _LEVELS:
        # Level names are matched case-sensitively: lowercase is ignored silently.
        return Reading(
            None,
            f"NCCL matches level names case-sensitively: {raw!r} is ignored; write {raw.upper()}",
        )
    return Reading(None, f"{raw!r} is not a level ({', '.join(_LEVELS)}): NCCL ignores it")


def _read_enum(var: NcclVar, raw: str) -> Reading:
    canonical = {c.upper(): c for c in var.choices}
    if raw.upper() in canonical:
        return Reading(canonical[raw.upper()])
    if var.name == "NCCL_LAUNCH_MODE":
        return Reading("PARALLEL", f"{raw!r} is not PARALLEL or GROUP: NCCL silently uses PARALLEL")
    return Reading(None, f"{var.name} accepts {', '.join(var.choices)}: {raw!r} is ignored")


def _read_list(var: NcclVar, raw: str) -> Reading:
    """PROTO/ALGO/DEBUG_SUBSYS: comma lists, `^` excludes, `coll:` sections split by `;`."""
    canonical = {c.upper(): c for c in var.choices}
    collectives = {c.upper(): c for c in COLLECTIVES}
    sections, unknown = [], []
    for section in raw.split(";"):
        prefix, _, body = section.rpartition(":")
        if prefix:
            if prefix.upper() not in collectives or var.name == "NCCL_DEBUG_SUBSYS":
                unknown.append(prefix)
            prefix = collectives.get(prefix.upper(), prefix) + ":"
        negate = "^" if body.startswith("^") else ""
        tokens = []
        for token in body.removeprefix("^").split(","):
            if token.upper() not in canonical:
                unknown.append(token)
            tokens.append(canonical.get(token.upper(), token))
        sections.append(prefix + negate + ",".join(tokens))
    value = ";".join(sections)
    if unknown:
        names = ", ".join(repr(u) for u in unknown)
        if var.name == "NCCL_DEBUG_SUBSYS":
            return Reading(value, f"unknown subsystem {names} is ignored")
        return Reading(
            value,
            f"unknown {names} in {var.name}: NCCL 2.24+ fails setup, older "
            f"versions skip it silently; legal: {', '.join(var.choices)}",
        )
    return Reading(value)


def is_nccl_name(name: str) -> bool:
    return name.startswith("NCCL_")


def suggest(name: str) -> str | None:
    """The known NCCL variable `name` is probably a misspelling of, if any.

    NCCL ignores unknown names without a word (NCCL_PRTO=LL was silently ignored on
    the H200 run), so a near miss is the most likely way tuning silently disappears.
    """
    if name in KNOWN_NAMES or not is_nccl_name(name):
        return None
    if name in RENAMED:
        return RENAMED[name]

    import difflib  # ~1.5 ms: only for a name NCCL does not read

    close = difflib.get_close_matches(name, sorted(KNOWN_NAMES), n=1, cutoff=0.85)
    return close[0] if close else None


def same_setting(name: str, left: str, right: str) -> bool:
    """Whether NCCL ends up with the same setting from both raw values."""
    if left == right:
        return True
    if name not in TUNING_VARIABLES:
        return False
    a, b = read(name, left), read(name, right)
    return a.value is not None and a.value == b.value
