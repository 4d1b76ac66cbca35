"""The tests' own raw TCP server: once stopped, nothing of it is left accepting connections.

``pytest --impl COPY`` in full runs every test in one process (``ink-py exercise check --all``);
a stopped server's thread still blocked in ``accept()`` took another server's connections there.
"""

from .raw_servers import RawServer


def test_a_stopped_raw_server_leaves_no_thread_accepting():
    servers = [RawServer(lambda conn, server: None) for _ in range(5)]
    for server in servers:
        server.stop()
        server.stop()  # twice (an explicit stop, then the with block's): harmless
    assert [server._thread.is_alive() for server in servers] == [False] * 5
