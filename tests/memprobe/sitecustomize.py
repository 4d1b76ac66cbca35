"""Loaded by the children tests/raw_servers.py's run_measured starts (PYTHONPATH): at exit, write
this process's peak resident memory since its exec (VmHWM, in KiB) to $INK_TEST_PEAK_FILE.
ru_maxrss cannot be used: it also counts the memory the child shared with the test process
before its exec."""

import atexit
import os

_PATH = os.environ.get("INK_TEST_PEAK_FILE")


def _write_peak() -> None:
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    with open(_PATH, "w") as out:  # type: ignore[arg-type]
                        out.write(line.split()[1])
    except OSError:
        pass


if _PATH:
    atexit.register(_write_peak)
