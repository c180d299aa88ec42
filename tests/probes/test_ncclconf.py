"""NCCL config files: NCCL's format, precedence, and paths as the process sees them."""

from __future__ import annotations

import ctypes.util
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from envguard.probes.ncclconf import ConfigFile, config_files, parse_conf
from envguard.probes.observe import Setting, effective_settings, observe
from envguard.probes.process import snapshot


def test_format_is_nccls() -> None:
    text = (
        "# a comment\n"
        "NCCL_PROTO=LL\n"
        "NCCL_PROTO=Simple\n"  # the first occurrence in a file wins
        "no equals sign here\n"
        "NCCL_SOCKET_IFNAME==ens1f0\n"  # split at the first '='
        'NCCL_ALGO="Ring"\n'  # no quote removal
    )
    values, problems = parse_conf(text)
    assert values == {"NCCL_PROTO": "LL", "NCCL_SOCKET_IFNAME": "=ens1f0", "NCCL_ALGO": '"Ring"'}
    assert problems == []


def test_lines_nccl_misreads_are_explained() -> None:
    values, problems = parse_conf("NCCL_PROTO=LL\r\nNCCL_ALGO = Ring\nNCCL_NTHREADS= 512\n")
    assert values == {"NCCL_PROTO": "LL", "NCCL_ALGO ": " Ring", "NCCL_NTHREADS": " 512"}
    assert problems == [
        (
            "NCCL_PROTO",
            "line 1 ends with CR (\\r): NCCL before 2.30 keeps it in the value; "
            "save the file with Unix line endings",
        ),
        (
            "NCCL_ALGO",
            "line 2: NCCL does not trim spaces, so this line sets 'NCCL_ALGO ', not "
            "NCCL_ALGO; remove the spaces",
        ),
        ("NCCL_NTHREADS", "line 3: NCCL keeps the spaces around the value ' 512'; remove them"),
    ]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A directory laid out like a container's root filesystem."""
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "passwd").write_text(
        "root:x:0:0:root:/root:/bin/bash\nsvc:x:1234:1234::/srv/svc:/bin/sh\n"
    )
    (tmp_path / "etc" / "nccl.conf").write_text("NCCL_PROTO=Simple\nNCCL_GRAPH_FILE=/g.xml\n")
    (tmp_path / "srv" / "svc").mkdir(parents=True)
    (tmp_path / "srv" / "svc" / ".nccl.conf").write_text("NCCL_PROTO=LL128\nNCCL_ALGO=Tree\n")
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "tuned.conf").write_text("NCCL_ALGO=Ring\n")
    return tmp_path


def test_home_file_comes_from_passwd_then_etc(root: Path) -> None:
    files = config_files(root, 1234, {"HOME": "/elsewhere"}, "/")
    assert [(f.path, f.state) for f in files] == [
        ("/srv/svc/.nccl.conf", "read"),
        ("/etc/nccl.conf", "read"),
    ]


def test_nccl_conf_file_replaces_the_home_file_and_is_relative_to_cwd(root: Path) -> None:
    files = config_files(root, 1234, {"NCCL_CONF_FILE": "tuned.conf"}, "/work")
    assert [(f.path, f.values) for f in files] == [
        ("/work/tuned.conf", {"NCCL_ALGO": "Ring"}),
        ("/etc/nccl.conf", {"NCCL_PROTO": "Simple", "NCCL_GRAPH_FILE": "/g.xml"}),
    ]


def test_missing_files_are_absent(tmp_path: Path) -> None:
    files = config_files(tmp_path, 0, {"HOME": "/root"}, "/")
    assert [(f.path, f.state) for f in files] == [
        ("/root/.nccl.conf", "absent"),
        ("/etc/nccl.conf", "absent"),
    ]


def test_precedence_environment_then_user_file_then_etc(root: Path) -> None:
    files = tuple(config_files(root, 1234, {}, "/"))
    environ = {"NCCL_PROTO": "LL", "NCCL_NTHREADS": ""}
    assert effective_settings(environ, files) == {
        "NCCL_PROTO": Setting("LL", "environ"),
        "NCCL_NTHREADS": Setting("", "environ"),
        "NCCL_ALGO": Setting("Tree", "/srv/svc/.nccl.conf"),
        "NCCL_GRAPH_FILE": Setting("/g.xml", "/etc/nccl.conf"),
    }
    # setenv(name, value, 0) never overwrites: an empty variable (unset, to NCCL) blocks
    # the file's value. This is how a launcher neutralises a vendor /etc/nccl.conf line.
    blocked = effective_settings(
        {"NCCL_ALGO": ""}, (ConfigFile("/f", "read", {"NCCL_ALGO": "Ring"}),)
    )
    assert blocked == {"NCCL_ALGO": Setting("", "environ")}


def test_files_are_read_through_the_process_root(
    tmp_path: Path, spawn: Callable[..., subprocess.Popen[str]]
) -> None:
    conf = tmp_path / "nccl.conf"
    conf.write_text("NCCL_ALGO=Ring\n")
    proc = spawn("", {"NCCL_CONF_FILE": str(conf)})
    observed = observe(proc.pid).processes[0]
    assert observed.config_files[0] == ConfigFile(str(conf), "read", {"NCCL_ALGO": "Ring"})
    assert observed.effective is not None
    assert observed.effective["NCCL_ALGO"] == Setting("Ring", str(conf))


def test_env_plugin_named_or_disabled(spawn: Callable[..., subprocess.Popen[str]]) -> None:
    named = spawn("", {"NCCL_ENV_PLUGIN": "libmy-env.so"})
    disabled = spawn("", {"NCCL_ENV_PLUGIN": "none"})
    assert observe(named.pid).processes[0].env_plugin == "NCCL_ENV_PLUGIN=libmy-env.so (environ)"
    assert observe(disabled.pid, config_root=Path("/nonexistent")).processes[0].env_plugin is None


def test_env_plugin_installed_on_the_library_path(
    tmp_path: Path, spawn: Callable[..., subprocess.Popen[str]]
) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "libnccl-env.so").write_bytes(b"")
    proc = spawn("", {"LD_LIBRARY_PATH": str(tmp_path / "lib")})
    assert observe(proc.pid).processes[0].env_plugin == (
        f"{tmp_path / 'lib' / 'libnccl-env.so'} is installed"
    )


def test_env_plugin_loaded_into_the_process(
    tmp_path: Path, spawn: Callable[..., subprocess.Popen[str]]
) -> None:
    library = ctypes.util.find_library("m")
    assert library is not None
    found = next(
        p
        for d in (
            "/lib",
            "/usr/lib",
            "/lib64",
            "/usr/lib64",
            "/lib/x86_64-linux-gnu",
            "/usr/lib/x86_64-linux-gnu",
            "/lib/aarch64-linux-gnu",
            "/usr/lib/aarch64-linux-gnu",
        )
        if (p := Path(d) / library).exists()
    )
    plugin = tmp_path / "hidden" / "libnccl-env.so"
    plugin.parent.mkdir()
    shutil.copy(found, plugin)
    proc = spawn(f"import ctypes; ctypes.CDLL({str(plugin)!r})", {})
    observed = observe(proc.pid, config_root=tmp_path / "empty-root").processes[0]
    assert observed.env_plugin == f"{plugin} is loaded"
    assert snapshot(proc.pid).environ_state == "empty"
