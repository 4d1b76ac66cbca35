"""Several clients on one machine: each speaks from its own loopback address.

Linux routes all of 127.0.0.0/8 to ``lo``, so a socket bound to 127.0.0.2 before it connects
reaches a server on 127.0.0.1 as another client would (``REMOTE_ADDR`` 127.0.0.2): how the
quota tests tell a flooder from its victims. ``session_from(address)`` is a requests Session
whose connections start there; ``NEEDS_LOOPBACKS`` is the one-line reason to skip elsewhere
(macOS has 127.0.0.1 alone unless aliased).
"""

from __future__ import annotations

import socket
import sys
from typing import Any

import requests
from requests.adapters import HTTPAdapter


def _can_bind(address: str) -> bool:
    try:
        with socket.socket() as probe:
            probe.bind((address, 0))
        return True
    except OSError:
        return False


NEEDS_LOOPBACKS = None if sys.platform.startswith("linux") and _can_bind("127.0.0.2") else (
    "needs several loopback addresses (Linux routes 127.0.0.0/8 to lo): clients are told apart by address"
)  # fmt: skip


class _FromAddress(HTTPAdapter):
    def __init__(self, address: str) -> None:
        self.address = address
        super().__init__()

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        kwargs["source_address"] = (self.address, 0)
        super().init_poolmanager(*args, **kwargs)


def session_from(address: str) -> requests.Session:
    """A requests Session whose every connection comes from ``address`` (a 127.x.y.z on Linux)."""
    session = requests.Session()
    session.mount("http://", _FromAddress(address))
    return session


def loopback(number: int) -> str:
    """The ``number``-th client address after 127.0.0.1: 127.0.0.2, 127.0.0.3 … (all of 127/8 is lo's)."""
    return f"127.0.{(number + 1) // 256}.{(number + 1) % 256}"
