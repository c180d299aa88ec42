"""Which sockets listen on a TCP port, and which processes hold them: what `ss -ltnp` does.

The socket inodes come from the kernel's sock_diag netlink interface, asked for LISTEN
sockets only (linux/inet_diag.h, as ss asks): ~0.1 ms. /proc/net/tcp{,6} is the fallback
where netlink is refused (a restricted sandbox): it walks the whole established-socket hash
table on each read, ~2 ms a read on a large-memory host. Both see this network namespace.
The holders are the processes with that inode among their fds (/proc/PID/fd/N ->
`socket:[INODE]`).
"""

from __future__ import annotations

import os
import struct

from envguard.probes.process import read_proc

TCP_LISTEN = 10  # include/net/tcp_states.h
LISTEN_HEX = f"{TCP_LISTEN:02X}"  # as /proc/net/tcp prints the state

# include/uapi/linux/{netlink,sock_diag,inet_diag}.h
NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
_HEADER = struct.Struct("=IHHII")  # nlmsghdr: len, type, flags, seq, pid
_REQUEST = struct.Struct("=BBBBI48x")  # inet_diag_req_v2, its inet_diag_sockid left zero
_SPORT = struct.Struct(">H")  # inet_diag_msg.id.idiag_sport, network order, at offset 4
_INODE = struct.Struct("=I")  # inet_diag_msg.idiag_inode, at offset 68


def listening_inodes(port: int) -> set[int]:
    """Socket inodes listening on TCP `port` (IPv4 and IPv6)."""
    import socket  # ~3 ms: only --port and launch's health check ask

    try:
        return {i for family in (socket.AF_INET, socket.AF_INET6) for i in _diag(family, port)}
    except OSError:
        return _from_proc_net(port)


def _diag(family: int, port: int) -> list[int]:
    import socket

    request = _REQUEST.pack(family, socket.IPPROTO_TCP, 0, 0, 1 << TCP_LISTEN)
    header = _HEADER.pack(
        _HEADER.size + len(request), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST | NLM_F_DUMP, 1, 0
    )
    found: list[int] = []
    with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG) as sock:
        sock.settimeout(2.0)
        sock.sendto(header + request, (0, 0))
        while True:
            data = sock.recv(1 << 16)
            offset = 0
            while offset + _HEADER.size <= len(data):
                length, kind, _, _, _ = _HEADER.unpack_from(data, offset)
                if kind == NLMSG_DONE:
                    return found
                if kind == NLMSG_ERROR or length < _HEADER.size:
                    raise OSError("sock_diag refused the request")
                body = offset + _HEADER.size
                if _SPORT.unpack_from(data, body + 4)[0] == port:
                    found.append(_INODE.unpack_from(data, body + 68)[0])
                offset += (length + 3) & ~3  # NLMSG_ALIGN
            if not data:
                raise OSError("sock_diag ended without NLMSG_DONE")


def _from_proc_net(port: int) -> set[int]:
    inodes: set[int] = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = read_proc(f"/proc/net/{table}").decode("ascii", "replace").splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            # sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
            listens = len(fields) > 9 and fields[3] == LISTEN_HEX
            if listens and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(int(fields[9]))
    return inodes


def socket_holders(inodes: set[int], pids: list[int]) -> tuple[set[int], int]:
    """The pids holding any of `inodes` open, and how many processes could not be looked
    into (another user's, without root)."""
    wanted = {f"socket:[{inode}]" for inode in inodes}
    holders: set[int] = set()
    denied = 0
    for pid in pids:
        try:
            with os.scandir(f"/proc/{pid}/fd") as entries:
                for entry in entries:
                    try:
                        if os.readlink(entry.path) in wanted:  # noqa: PTH115 - thousands of calls
                            holders.add(pid)
                            break
                    except OSError:
                        continue  # closed meanwhile
        except PermissionError:
            denied += 1
        except OSError:
            continue  # exited meanwhile
    return holders, denied
