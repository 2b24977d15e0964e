"""Network namespaces for "hosts" on one machine (run as root): a namespace per host, a veth pair to the root one.

A worker started with ``ip netns exec <name>`` reaches servers of the root namespace only through
the veth address :attr:`Netns.host_ip` (the servers must listen on it, e.g. on ``0.0.0.0``), never
through a loopback it shares with them. Names and addresses are fixed per index (``10.231.<index>.0/30``);
:meth:`Netns.delete` removes what :meth:`Netns.create` made.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass

__all__ = ["Netns", "netns_usable"]


def _ip(*args: str, netns: str | None = None) -> None:
    cmd = ["ip", "netns", "exec", netns, "ip", *args] if netns else ["ip", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {done.stderr.strip()}")


@dataclass
class Netns:
    """One network namespace ``name`` with a veth pair: ``host_ip`` outside (root namespace), ``inner_ip`` in it."""

    name: str
    index: int
    created: bool = False

    @property
    def host_ip(self) -> str:
        return f"10.231.{self.index}.1"

    @property
    def inner_ip(self) -> str:
        return f"10.231.{self.index}.2"

    def create(self) -> Netns:
        """Create the namespace, its loopback and the veth pair (torn down by :meth:`delete`)."""
        outer, inner = f"vf31o{self.index}", f"vf31i{self.index}"
        _ip("netns", "add", self.name)
        self.created = True
        _ip("link", "add", outer, "type", "veth", "peer", "name", inner)
        _ip("link", "set", inner, "netns", self.name)
        _ip("addr", "add", f"{self.host_ip}/30", "dev", outer)
        _ip("link", "set", outer, "up")
        _ip("addr", "add", f"{self.inner_ip}/30", "dev", inner, netns=self.name)
        _ip("link", "set", inner, "up", netns=self.name)
        _ip("link", "set", "lo", "up", netns=self.name)
        return self

    def delete(self) -> None:
        """Delete the namespace (its veth end goes with it, and the pair with that end)."""
        if self.created:
            subprocess.run(["ip", "netns", "delete", self.name], capture_output=True, check=False)
            subprocess.run(["ip", "link", "delete", f"vf31o{self.index}"], capture_output=True, check=False)
            self.created = False


def netns_usable() -> str | None:
    """None when ``ip netns`` works here (root, iproute2), else why not."""
    if shutil.which("ip") is None:
        return "iproute2 (`ip`) is not installed"
    probe = Netns("fleet31-probe", 250)
    try:
        probe.create()
    except RuntimeError as exc:
        return str(exc)
    finally:
        probe.delete()
    return None
