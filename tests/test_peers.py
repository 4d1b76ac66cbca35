"""Who a client is (ink_py/peers.py): the fact every quota counts by, and that a client must not choose.

A table of requests — peers, proxies trusted or not, X-Forwarded-For chains honest and forged,
IPv6 and its /64, IPv4-mapped addresses, ports and brackets, junk — and the client each is
counted as; ``FORWARDED_ALLOW_IPS`` as gunicorn and uvicorn write it; and two properties: from a
peer no one trusts, no header changes the client, and behind a trusted proxy, whatever a
client writes before the proxy's own entry changes nothing either.
"""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ink_py.peers import UNKNOWN, client_of, forwarded_warning, parse_trusted

PROXY = "10.0.0.5"  # the proxy in front, the one FORWARDED_ALLOW_IPS lists in most rows


@pytest.mark.parametrize(
    ("remote", "forwarded", "trusted", "client"),
    [
        ("203.0.113.9", None, "", "203.0.113.9"),
        ("203.0.113.9", "198.51.100.1", "", "203.0.113.9"),  # nobody trusted (the default): the header is ignored
        ("203.0.113.9", "198.51.100.1", PROXY, "203.0.113.9"),  # from a peer that is not the proxy: ignored
        (PROXY, "198.51.100.1", PROXY, "198.51.100.1"),  # the proxy names its client
        (PROXY, "6.6.6.6, 198.51.100.1", PROXY, "198.51.100.1"),  # the client's own X-Forwarded-For: not believed
        (PROXY, "6.6.6.6, 198.51.100.1, 10.0.0.7", "10.0.0.0/8", "198.51.100.1"),  # two proxies, both trusted
        (PROXY, "10.0.0.8, 10.0.0.7", "10.0.0.0/8", "10.0.0.8"),  # only proxies: the leftmost one
        (PROXY, "junk, 198.51.100.1", PROXY, "198.51.100.1"),
        (PROXY, "198.51.100.1, junk", PROXY, PROXY),  # a malformed hop: the proxy stands for the client
        (PROXY, "", PROXY, PROXY),
        (PROXY, "198.51.100.1:5678", PROXY, "198.51.100.1"),  # a port
        (PROXY, "[2001:db8:1:2::99]:443", PROXY, "2001:db8:1:2::/64"),  # brackets, a port, a /64
        (PROXY, "198.51.100.1", "*", "198.51.100.1"),
        ("2001:db8:1:2:aaaa::1", None, "", "2001:db8:1:2::/64"),  # one machine has a whole /64
        ("2001:db8:1:2:bbbb::2", None, "", "2001:db8:1:2::/64"),
        ("2001:db8:1:3::1", None, "", "2001:db8:1:3::/64"),
        ("::ffff:203.0.113.9", None, "", "203.0.113.9"),  # IPv4 on an IPv6 socket
        ("fe80::1%eth0", None, "", "fe80::/64"),
        ("", "198.51.100.1", "*", UNKNOWN),  # a Unix socket: no address at all
        ("not-an-address", None, "", UNKNOWN),
        ("::1", "198.51.100.1", "::1", "198.51.100.1"),
    ],
)
def test_the_client_is_the_peer_or_the_address_a_trusted_proxy_names(
    remote: str, forwarded: str | None, trusted: str, client: str
) -> None:
    environ = {"REMOTE_ADDR": remote} | ({"HTTP_X_FORWARDED_FOR": forwarded} if forwarded is not None else {})
    assert client_of(environ, parse_trusted(trusted)) == client


@pytest.mark.parametrize(
    ("text", "networks"),
    [
        ("", []),
        ("127.0.0.1,::1", ["127.0.0.1/32", "::1/128"]),  # gunicorn's own default, written out
        (" 10.0.0.0/8 , 192.168.1.7 ", ["10.0.0.0/8", "192.168.1.7/32"]),
        ("10.1.2.3/8", ["10.0.0.0/8"]),  # host bits allowed, as gunicorn allows them
        ("*", ["0.0.0.0/0", "::/0"]),
    ],
)
def test_forwarded_allow_ips_as_gunicorn_and_uvicorn_write_it(text: str, networks: list[str]) -> None:
    assert [str(network) for network in parse_trusted(text)] == networks


@pytest.mark.parametrize("text", ["localhost", "10.0.0.300", "10.0.0.0/33", "unix:/run/x.sock", "1.2.3.4;5.6.7.8"])
def test_an_entry_that_is_no_address_is_refused_by_name(text: str) -> None:
    with pytest.raises(ValueError, match="is not an IP address or network"):
        parse_trusted(text)


def test_the_warning_names_the_peer_only_when_a_header_is_ignored() -> None:
    trusted = parse_trusted(PROXY)
    assert forwarded_warning({"REMOTE_ADDR": PROXY, "HTTP_X_FORWARDED_FOR": "1.2.3.4"}, trusted) is None
    assert forwarded_warning({"REMOTE_ADDR": "10.9.9.9"}, trusted) is None  # no header: nothing to say
    warning = forwarded_warning({"REMOTE_ADDR": "10.9.9.9", "HTTP_X_FORWARDED_FOR": "1.2.3.4"}, trusted)
    assert warning is not None and warning.startswith("warning: X-Forwarded-For from 10.9.9.9, which ")


headers = st.text(alphabet=st.characters(codec="latin-1"), max_size=200)  # what a WSGI server hands on
addresses = st.ip_addresses().map(str)


@given(peer=addresses, header=headers)
def test_from_an_untrusted_peer_no_header_changes_the_client(peer: str, header: str) -> None:
    assert client_of({"REMOTE_ADDR": peer, "HTTP_X_FORWARDED_FOR": header}, ()) == client_of({"REMOTE_ADDR": peer}, ())


@given(written=headers, real=st.ip_addresses(v=4).filter(lambda a: a not in ipaddress.ip_network("10.0.0.0/8")))
def test_what_a_client_writes_before_the_proxys_entry_changes_nothing(written: str, real: object) -> None:
    environ = {"REMOTE_ADDR": PROXY, "HTTP_X_FORWARDED_FOR": f"{written}, {real}"}  # nginx appends the peer
    assert client_of(environ, parse_trusted("10.0.0.0/8")) == str(real)
