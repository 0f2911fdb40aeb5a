"""Which process owns a piece of unfinished work (a chunked import, a staging folder).

Work that can be left half-done by a killed process carries ``<host>-<pid>``;
cleanup removes it only when that process is gone (or, for work of another
host, once it is old), so a running import or export is never touched.
"""

from __future__ import annotations

import os
import re
import socket

_TAG = re.compile(r"(?P<host>[A-Za-z0-9_.]+)-(?P<pid>\d+)$")


def host() -> str:
    return re.sub(r"[^A-Za-z0-9_.]", "_", socket.gethostname())[:40] or "host"


def owner_tag() -> str:
    """``<host>-<pid>`` of this process."""
    return f"{host()}-{os.getpid()}"


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def owner_gone(tag: str | None) -> bool | None:
    """True if ``tag`` names a dead process of this host, False if a live one (or this
    process), None when it cannot tell (no tag, another host)."""
    m = _TAG.search(tag or "")
    if m is None or m.group("host") != host():
        return None
    pid = int(m.group("pid"))
    return pid != os.getpid() and not pid_alive(pid)
