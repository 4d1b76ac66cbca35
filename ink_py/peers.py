"""Who a client is: its address, or the one a proxy it trusts names — beyond both articles (issue 33).

Quotas count per client (second_article/quotas.py), so the client must be a fact the client
cannot choose. ``client_of`` takes the WSGI ``REMOTE_ADDR``; only when that peer is a proxy
listed in ``FORWARDED_ALLOW_IPS`` (the variable gunicorn and uvicorn read for the same fact;
``parse_trusted``) does it believe ``X-Forwarded-For``, and then the rightmost entry that is not
itself a trusted proxy (the leftmost ones are whatever the client wrote). Nothing is trusted by
default. ``client_key`` names an address as quotas count it: IPv4 as is, IPv6 by its /64 (one
machine usually has a whole /64 to pick from).

    >>> trusted = parse_trusted("10.0.0.5")
    >>> client_of({"REMOTE_ADDR": "10.0.0.5", "HTTP_X_FORWARDED_FOR": "6.6.6.6, 203.0.113.9"}, trusted)
    '203.0.113.9'
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Trusted = tuple[Network, ...]
UNKNOWN = "unknown"  # a peer that is no IP address (a Unix socket): all such share one quota
MAX_FORWARDED_HOPS = 20  # X-Forwarded-For entries looked at, from the right


def parse_trusted(text: str) -> Trusted:
    """``FORWARDED_ALLOW_IPS``: addresses and networks, comma-separated; ``*`` for any peer.
    ValueError naming the first entry that is neither.

    >>> [str(network) for network in parse_trusted(" 127.0.0.1, 10.0.0.0/8,::1 ")]
    ['127.0.0.1/32', '10.0.0.0/8', '::1/128']
    >>> parse_trusted("")
    ()
    """
    found: list[Network] = []
    for entry in (part.strip() for part in text.split(",")):
        if entry == "*":
            found += [ipaddress.ip_network("0.0.0.0/0"), ipaddress.ip_network("::/0")]
        elif entry:
            try:
                found.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                raise ValueError(f"{entry[:60]!r} is not an IP address or network (or *)") from None
    return tuple(found)


def client_of(environ: Mapping[str, Any], trusted: Trusted) -> str:
    """The client a request comes from, as ``client_key`` names it.

    >>> client_of({"REMOTE_ADDR": "203.0.113.9", "HTTP_X_FORWARDED_FOR": "1.2.3.4"}, ())  # not a trusted proxy
    '203.0.113.9'
    >>> client_of({"REMOTE_ADDR": "2001:db8:1:2:a:b:c:d"}, ())
    '2001:db8:1:2::/64'
    """
    peer = address(str(environ.get("REMOTE_ADDR") or ""))
    if peer is None:
        return UNKNOWN
    client = peer
    if is_trusted(peer, trusted):
        hops = str(environ.get("HTTP_X_FORWARDED_FOR") or "").split(",")[-MAX_FORWARDED_HOPS:]
        for hop in reversed(hops):
            named = address(hop)
            if named is None:
                break  # a malformed entry: the proxy that passed it on stands for the client
            client = named
            if not is_trusted(named, trusted):
                break
    return client_key(client)


def forwarded_warning(environ: Mapping[str, Any], trusted: Trusted) -> str | None:
    """The ``warning:`` line for an ``X-Forwarded-For`` from a peer ``FORWARDED_ALLOW_IPS`` does not
    list (it is ignored, so all behind that peer count as one client), else None.

    >>> print(forwarded_warning({"REMOTE_ADDR": "10.0.0.5", "HTTP_X_FORWARDED_FOR": "1.2.3.4"}, ())[:70])
    warning: X-Forwarded-For from 10.0.0.5, which FORWARDED_ALLOW_IPS does
    """
    peer = address(str(environ.get("REMOTE_ADDR") or ""))
    if "HTTP_X_FORWARDED_FOR" not in environ or (peer is not None and is_trusted(peer, trusted)):
        return None
    return (
        f"warning: X-Forwarded-For from {peer or UNKNOWN}, which FORWARDED_ALLOW_IPS does not list: ignored, "
        "so every client behind it shares one quota"
    )


def is_trusted(peer: Address, trusted: Trusted) -> bool:
    return any(peer.version == network.version and peer in network for network in trusted)


def address(text: str) -> Address | None:
    """An address as a header or ``REMOTE_ADDR`` gives it (a port, brackets, an IPv4-mapped IPv6), or None.

    >>> address(" [2001:db8::1]:443"), address("::ffff:192.0.2.7"), address("unknown")
    (IPv6Address('2001:db8::1'), IPv4Address('192.0.2.7'), None)
    """
    text = text.strip()
    if text.startswith("["):
        text = text[1:].partition("]")[0]
    elif text.count(":") == 1:  # IPv4 with a port
        text = text.partition(":")[0]
    try:
        found = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(found, ipaddress.IPv6Address) and found.ipv4_mapped is not None:
        return found.ipv4_mapped
    return found


def client_key(peer: Address) -> str:
    """An address as quotas count it: IPv4 whole, IPv6 by its /64.

    >>> client_key(ipaddress.ip_address("192.0.2.7")), client_key(ipaddress.ip_address("2001:db8::5"))
    ('192.0.2.7', '2001:db8::/64')
    """
    if isinstance(peer, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network((int(peer), 64), strict=False))  # a zone (%eth0) is no part of it
    return str(peer)
