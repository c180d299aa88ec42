"""The profile format, version 1: one place declares every key.

The classes are NamedTuples: immutable, and free to define on `envguard check`'s path, which
uses a cached, already-validated profile without importing pydantic (~75 ms here) or even
`dataclasses` (~13 ms with the `inspect` it imports, and ~1 ms per class). Pydantic validates
a profile on load and exports the JSON Schema (`envguard profile schema`) through dataclass
mirrors of these classes that profile/validation.py derives from them, docstrings included.

Format history (bump SCHEMA_VERSION and add a line when the format changes):
  1 - name, version, description, extends, [server] kind,
      [env] required / optional / forbidden / strict_prefixes,
      [server] version / flags / forbidden_flags / command / health_url.
  2 - [gpu] count / name / driver / driver_min / persistence / power_limit_min / ecc / mig /
      compute_mode / pcie_gen_min / pcie_width_min / forbidden_clock_events. A format 1
      file is still read as it was; a file with [gpu] says schema_version = 2, so that an
      older envguard answers "needs a newer envguard", not "unknown key".
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple

from envguard.knowledge.gpu import ClockEvent, ComputeMode
from envguard.knowledge.servers import ProfileKind

if TYPE_CHECKING:
    from annotated_types import Ge, Len

    EnvName = Annotated[str, Len(1, 256)]

SCHEMA_VERSION = 2

# The default of every table: shared by all profiles, so it must never change.
NO_ENTRIES: Mapping[str, Any] = MappingProxyType({})


def bind_constraints() -> None:
    """Make the names the (string) annotations use resolvable, before pydantic reads them.

    Annotations here stay unevaluated (`from __future__ import annotations`) and pydantic
    evaluates them in this module's namespace when it builds a validator. Importing
    annotated_types at module level would cost ~6.5 ms (it pulls in typing_extensions) on
    every `envguard check` and `launch`, which only use cached, validated profiles.
    """
    from annotated_types import Ge, Len

    globals().update(Ge=Ge, Len=Len, EnvName=Annotated[str, Len(1, 256)])


class ValueRule(NamedTuple):
    """A required value given as a table: every condition given must hold."""

    one_of: tuple[str, ...] | None = None
    """The value must be one of these (compared the way NCCL reads them, for NCCL variables)."""
    min: int | None = None
    """Lowest accepted integer; the live value is parsed the way NCCL parses integers (strtoll)."""
    max: int | None = None
    """Highest accepted integer; parsed like `min`."""
    pattern: str | None = None
    """A Python regular expression the whole value must match."""


RequiredValue = str | int | ValueRule


Scalar = str | int | float | bool


class FlagRule(NamedTuple):
    """A server flag given as a table: every condition given must hold."""

    one_of: tuple[Scalar, ...] | None = None
    """The flag's value must be one of these (typed as the server types it)."""
    min: float | None = None
    """Lowest accepted number."""
    max: float | None = None
    """Highest accepted number."""


FlagValue = Scalar | tuple[Scalar, ...] | FlagRule


class ServerSection(NamedTuple):
    """The server the profile describes."""

    kind: ProfileKind = "generic"
    """sglang, vllm, or generic (any other command)."""
    version: str | None = None
    """Server version whose flag catalog applies; unset: the version the server imports."""
    flags: Mapping[str, FlagValue] = NO_ENTRIES
    """Server flags by any spelling (tp-size, --tp-size, tp_size): the value the server must
    run with, typed as it parses it. A value equal to the default is satisfied by omission;
    `true` for a switch means it is given."""
    forbidden_flags: tuple[str, ...] = ()
    """Flags that must not be given (on the command line or in its --config file)."""
    command: tuple[str, ...] = ()
    """The launch command (argv) for `envguard launch` when none is given after `--`."""
    health_url: str | None = None
    """What `envguard launch` polls until the server is up, e.g. http://127.0.0.1:8000/health."""


class EnvSection(NamedTuple):
    """What the environment of every server process must hold."""

    required: Mapping[EnvName, RequiredValue] = NO_ENTRIES
    """Variables that must be set: an exact string, or a table (one_of, min, max, pattern)."""
    optional: Mapping[EnvName, RequiredValue] = NO_ENTRIES
    """Variables that may be unset, but when set must satisfy their rule (NCCL_DEBUG = WARN)."""
    forbidden: tuple[EnvName, ...] = ()
    """Variables that must not be set (in the environment or an NCCL config file)."""
    strict_prefixes: tuple[EnvName, ...] = ()
    """Namespaces where any live variable the profile does not name is drift, e.g. "NCCL_"."""


class GpuSection(NamedTuple):
    """What the GPUs the server sees must be, read through NVML. A profile with any of
    these keys makes envguard load NVML; without them NVML is never loaded."""

    count: Annotated[int, Ge(0)] | None = None  # type: ignore[assignment]  # shadows tuple.count
    """How many GPUs the server sees (after its CUDA_VISIBLE_DEVICES)."""
    name: str | None = None
    """A Python regular expression every GPU's name must match whole, e.g. "NVIDIA H200"."""
    driver: str | None = None
    """A regular expression the driver version must match whole, e.g. "580\\..*"."""
    driver_min: str | None = None
    """Lowest accepted driver version, compared number by number ("570.86" < "580.65.06")."""
    persistence: bool | None = None
    """Persistence mode on (true); off after a reboot makes every start pay driver set-up."""
    power_limit_min: Annotated[float, Ge(0)] | None = None
    """Lowest accepted enforced power limit, in watts (a lowered cap slows every kernel)."""
    ecc: bool | None = None
    """ECC on (true) or off; the mode pending for the next reboot must agree too."""
    mig: bool | None = None
    """MIG on (true) or off; the mode pending for the next reboot must agree too."""
    compute_mode: ComputeMode | None = None
    """default, exclusive_process or prohibited."""
    pcie_gen_min: Annotated[int, Ge(1)] | None = None
    """Lowest accepted PCIe link generation (a card that trained down to Gen3 is drift)."""
    pcie_width_min: Annotated[int, Ge(1)] | None = None
    """Lowest accepted PCIe link width (lanes)."""
    forbidden_clock_events: tuple[ClockEvent, ...] = ()
    """Clock-event (throttle) reasons that must not be active at check time, e.g.
    hw_slowdown, sw_thermal_slowdown, hw_power_brake_slowdown."""

    def is_empty(self) -> bool:
        return self == GpuSection()


class Profile(NamedTuple):
    """An envguard profile: the environment a server was tuned for."""

    schema_version: Annotated[int, Ge(1)]
    """Format version of this file; envguard refuses files newer than it understands."""
    name: Annotated[str, Len(1, 128)]
    """Short name, e.g. kimi-k2.5-int4-tp8."""
    version: Annotated[int, Ge(1)]
    """Integer bumped on every change to the profile."""
    description: str = ""
    extends: tuple[str, ...] = ()
    """Profiles this one builds on, relative to this file; later ones win, this file wins last."""
    server: ServerSection = ServerSection()
    env: EnvSection = EnvSection()
    gpu: GpuSection = GpuSection()

    def declared_names(self) -> frozenset[str]:
        """Every variable name the profile mentions (their values may be shown)."""
        env = self.env
        return frozenset(env.required) | frozenset(env.optional) | frozenset(env.forbidden)


def to_data(value: Any) -> Any:
    """A profile, or any part of it, as plain data: every table a dict (what the TOML file
    and the profile cache's JSON hold); lists stay tuples."""
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return {name: to_data(item) for name, item in zip(value._fields, value, strict=True)}
    if isinstance(value, Mapping):
        return {key: to_data(item) for key, item in value.items()}
    if isinstance(value, tuple):
        return tuple(to_data(item) for item in value)
    return value
