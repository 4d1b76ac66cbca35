"""Long work shows where it is, and Ctrl-C stops it cleanly (issue 29 item 2).

``benchmarks/run.py`` and ``.ci/realserver-setup`` (with the ``.ci/llama-server-setup`` and
``.ci/litellm-setup`` it calls) say where they are on stderr: redrawn in place on a terminal (a
pty here), plain lines otherwise. Ctrl-C — a SIGINT to the real process — ends them with exit
130 and one line, and leaves every file whole: a results file that was there is byte-for-byte
what it was, and nothing half-made stays behind. The benchmark runs its smallest sizes; the
setup scripts run with a stand-in for pip (``python -m pip`` only: every other ``python`` is
the real one), a cache in ``tmp_path``, and the slow step made slow on purpose when a test
needs to interrupt it. Every wait is bounded; nothing is timed.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from .helpers import ROOT, ctrl_c_reaches_children

WAIT = 30.0  # the most any step below is waited for: a bound, never a speed check
RUN_PY = [sys.executable, str(ROOT / "benchmarks" / "run.py")]
SMALL = ["--quick", "--sizes", "0.0625", "--repeats", "1"]  # 64 KiB of chunks: a few seconds
LLAMA_WHEEL = "llama_cpp_python-0.3.36-cp311-cp311-linux_x86_64.whl"


def read_pty(master: int, sink: bytearray) -> None:
    """Everything the child writes to the terminal, until it closes it."""
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child side is closed
            return
        if not data:
            return
        sink.extend(data)


def on_a_terminal(argv: list[str], **popen: object) -> tuple[subprocess.Popen[bytes], bytearray, threading.Thread]:
    """``argv`` with its stderr on a pseudo-terminal; the bytes it draws there are gathered."""
    master, child = os.openpty()
    process = subprocess.Popen(argv, stderr=child, **popen)  # type: ignore[call-overload]
    os.close(child)
    screen = bytearray()
    reader = threading.Thread(target=read_pty, args=(master, screen), daemon=True)
    reader.start()
    return process, screen, reader


def lines_until(stream: object, wanted: Callable[[str], bool]) -> list[str]:
    """Lines of ``stream`` up to the first that is ``wanted`` (the caller bounds the wait)."""
    seen = []
    for line in stream:  # type: ignore[attr-defined]
        seen.append(line)
        if wanted(line):
            return seen
    raise AssertionError(f"it ended before the line looked for: {''.join(seen)[-2000:]}")


def interrupt_when(
    process: subprocess.Popen[str],
    wanted: Callable[[str], bool],
    ready: Callable[[], bool] = lambda: True,
    group: bool = False,
) -> str:
    """Send SIGINT once a stderr line is ``wanted`` and then ``ready()`` — to the process, or to its
    whole process group as a terminal's Ctrl-C does; return all of stderr once it has ended."""
    watchdog = threading.Timer(WAIT, process.kill)  # a bound on the blocking reads
    watchdog.start()
    try:
        before = lines_until(process.stderr, wanted)
        deadline = time.monotonic() + WAIT
        while not ready() and time.monotonic() < deadline:
            time.sleep(0.02)
        if group:
            os.killpg(process.pid, signal.SIGINT)
        else:
            process.send_signal(signal.SIGINT)
        _, rest = process.communicate(timeout=WAIT)
    finally:
        watchdog.cancel()
        process.kill()
    return "".join(before) + rest


# ── benchmarks/run.py ──────────────────────────────────────────────────────────────────


def test_the_benchmark_says_each_stage_as_plain_lines_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    done = subprocess.run(
        [*RUN_PY, *SMALL, "--out", str(tmp_path)], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert "\r" not in done.stderr and "\x1b" not in done.stderr  # no redrawing in a log
    lines = done.stderr.splitlines()
    assert all(re.match(r"\[\d+/10 · \d+ s\] ", line) for line in lines), lines
    stages = [line.split("] ", 1)[1] for line in lines if " · " not in line.split("] ", 1)[1]]
    assert stages == [
        "checking every contender's answers",
        "timing chunks",
        "timing per-event",
        "timing huge-args",
        "timing bytewise",
        "timing the wire dialects",
        "delivery: events in the read that completes them",
        "latency over HTTP",
        "peak memory",
        f"writing {tmp_path}",
    ]
    assert "timing per-event · 64 KiB · 1/" in done.stderr  # a line when a size begins
    assert "## Summary" in done.stdout and (tmp_path / "results.md").exists()


def test_the_benchmark_redraws_one_line_in_place_on_a_terminal(tmp_path: Path) -> None:
    with open(tmp_path / "stdout.txt", "wb") as stdout:
        process, screen, reader = on_a_terminal([*RUN_PY, *SMALL, "--out", str(tmp_path)], stdout=stdout)
        try:
            process.wait(timeout=300)
        finally:
            process.kill()
        reader.join(WAIT)
    assert process.returncode == 0
    drawn = screen.decode()
    assert drawn.count("\r\n") == 1 and drawn.endswith("\r\n")  # one line, left at the end
    redraws = drawn.split("\r\x1b[K")
    assert len(redraws) > 20, drawn  # every run redraws it
    assert any(re.fullmatch(r"\[3/10 · \d+ s\] timing per-event · 64 KiB · \d+/\d+ runs", r) for r in redraws)
    assert "## Summary" in (tmp_path / "stdout.txt").read_text(encoding="utf-8")  # the results, apart


@pytest.mark.parametrize(
    ("options", "moment", "whole_group"),
    [
        (["--quick", "--repeats", "50"], "timing chunks · ", False),  # SIGINT to run.py alone
        (SMALL, "latency over HTTP · ink_py provider.stream, chunked", True),  # a terminal's: its server too
    ],
    ids=["timing", "latency-server"],
)
def test_ctrl_c_stops_the_benchmark_with_130_and_leaves_the_results_as_they_were(
    tmp_path: Path, options: list[str], moment: str, whole_group: bool
) -> None:
    results = tmp_path / "results.md"
    results.write_bytes(b"# an earlier run\n\xe2\x9c\x93 kept byte for byte\n")
    before = sorted(p.name for p in tmp_path.iterdir())
    with ctrl_c_reaches_children():
        process = subprocess.Popen(
            [*RUN_PY, *options, "--out", str(tmp_path)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            start_new_session=whole_group,  # its own process group, as a terminal's foreground job
        )
    stderr = interrupt_when(process, lambda line: moment in line, group=whole_group)
    assert process.returncode == 130, stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    assert stderr.rstrip().endswith("interrupted (the results folder holds its last complete set)")
    assert results.read_bytes() == b"# an earlier run\n\xe2\x9c\x93 kept byte for byte\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no new file, no temporary file


# ── .ci/realserver-setup and the two scripts it calls ───────────────────────────────────

PIP_STAND_IN = '''#!{python}
"""python, except that `-m pip` and `-m venv` are stood in for (tests/test_long_work.py)."""
import os, sys, time
from pathlib import Path

args = sys.argv[1:]
if args[:2] == ["-m", "venv"]:  # a venv whose python is this stand-in too
    Path(args[2], "bin").mkdir(parents=True)
    Path(args[2], "bin", "python").write_text(Path(__file__).read_text())
    os.chmod(Path(args[2], "bin", "python"), 0o755)
    sys.exit(0)
if args[:2] != ["-m", "pip"]:
    os.execv({python!r}, [{python!r}, *args])
command = args[2]
with open(os.environ["PIP_LOG"], "a") as log:
    print(os.getpid(), *args[2:], file=log, flush=True)
where = next((args[i + 1] for i, a in enumerate(args) if a in ("-w", "--dest")), None)
if command == "wheel":
    Path(where, {wheel!r}).write_bytes(b"PK half a wheel")  # what an interrupted build leaves
slow = os.environ.get("SLOW_PIP", "")
time.sleep(float(os.environ.get("SLOW_SECONDS", "60")) if slow and slow in " ".join(args) else 0)
if command == "wheel":
    Path(where, {wheel!r}).write_bytes(b"PK a whole wheel")
'''


needs_linux = pytest.mark.skipif(
    not Path("/proc/self/stat").exists() or shutil.which("setsid") is None,
    reason="the setup scripts are Linux CI's (setsid, /proc)",
)


@pytest.fixture
def setup_env(tmp_path: Path) -> dict[str, str]:
    """PATH with the pip stand-in first, a cache in tmp_path holding everything but what a test removes."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("python", "python3"):
        (bin_dir / name).write_text(PIP_STAND_IN.format(python=sys.executable, wheel=LLAMA_WHEEL))
        (bin_dir / name).chmod(0o755)
    cache = tmp_path / "cache" / "ink_py"
    (cache / "wheels").mkdir(parents=True)
    (cache / "wheels" / LLAMA_WHEEL).write_bytes(b"PK a whole wheel")
    (cache / "SmolLM2-135M-Instruct.Q4_1.gguf").write_bytes(b"GGUF the model, byte for byte")
    (cache / "llama-server-11434.0.0").mkdir()
    (cache / "llama-server-11434.0.0" / "llama-server").write_text("#!/bin/sh\n")
    (cache / "llama-server-11434.0.0" / "llama-server").chmod(0o755)
    (cache / "litellm-1.106.12" / "bin").mkdir(parents=True)
    (cache / "litellm-1.106.12" / ".installed").touch()
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "SLOW_PIP")}
    return {**env, "PATH": f"{bin_dir}{os.pathsep}{env['PATH']}", "XDG_CACHE_HOME": str(tmp_path / "cache"),
            "PIP_LOG": str(tmp_path / "pip.log")}  # fmt: skip


def setup_script(name: str, env: dict[str, str], **popen: object) -> subprocess.Popen[str]:
    with ctrl_c_reaches_children():  # bash cannot trap a SIGINT it was started ignoring
        return subprocess.Popen([str(ROOT / ".ci" / name)], env=env, text=True, **popen)  # type: ignore[call-overload]


def pip_calls(env: dict[str, str]) -> list[list[str]]:
    path = Path(env["PIP_LOG"])
    return [line.split() for line in path.read_text().splitlines()] if path.exists() else []


def gone(pid: int) -> bool:
    """True once ``pid`` has ended (waiting a little for its parent to reap it)."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
            if Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z"):
                return True  # ended; a zombie until its parent (also ended) is reaped
        except (ProcessLookupError, FileNotFoundError):
            return True
        time.sleep(0.05)
    return False


@needs_linux
def test_realserver_setup_prints_only_the_model_path_and_a_line_per_step_with_its_time(
    setup_env: dict[str, str], tmp_path: Path
) -> None:
    process = setup_script("realserver-setup", setup_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stdout, stderr = process.communicate(timeout=WAIT)
    assert process.returncode == 0, stderr
    assert stdout == f"{tmp_path}/cache/ink_py/SmolLM2-135M-Instruct.Q4_1.gguf\n"  # what .ci/run captures
    assert "\r" not in stderr
    steps = [line for line in stderr.splitlines() if " … done in " in line]
    assert [re.sub(r" … done in \d+ s$", "", line) for line in steps] == [
        f"realserver-setup: installing llama-cpp-python 0.3.36 into {Path(sys.prefix)}",
        "realserver-setup: installing llama-cpp-python[server]'s dependencies",
        "realserver-setup: llama-server (.ci/llama-server-setup: 10 to 25 minutes the first time)",
        "realserver-setup: LiteLLM's proxy (.ci/litellm-setup: about 2 minutes the first time)",
    ]
    assert re.fullmatch(r"realserver-setup: ready in \d+ s", stderr.splitlines()[-1])
    calls = pip_calls(setup_env)
    assert calls and all(call[1] == "install" for call in calls)  # nothing built, nothing downloaded


@needs_linux
def test_realserver_setup_counts_a_steps_seconds_in_place_on_a_terminal(setup_env: dict[str, str]) -> None:
    env = {**setup_env, "SLOW_PIP": "--force-reinstall", "SLOW_SECONDS": "1.5"}  # a step that lasts a second
    process, screen, reader = on_a_terminal([str(ROOT / ".ci" / "realserver-setup")], env=env, stdout=subprocess.PIPE)
    try:
        stdout, _ = process.communicate(timeout=WAIT)
    finally:
        process.kill()
    reader.join(WAIT)
    assert process.returncode == 0 and stdout.endswith(b".gguf\n")
    drawn = screen.decode()
    counted = re.findall(r"\r\x1b\[Krealserver-setup: installing llama-cpp-python 0\.3\.36 into \S+ … (\d+) s", drawn)
    assert counted and counted[-1] != "0", drawn  # the seconds, redrawn on the step's own line
    assert re.search(r"\r\x1b\[Krealserver-setup: installing llama-cpp-python 0\.3\.36 .* … done in \d+ s\r\n", drawn)


@needs_linux
def test_ctrl_c_during_the_build_exits_130_and_leaves_no_half_wheel(setup_env: dict[str, str], tmp_path: Path) -> None:
    cache = tmp_path / "cache" / "ink_py"
    (cache / "wheels" / LLAMA_WHEEL).unlink()  # so the build runs
    env = {**setup_env, "SLOW_PIP": "wheel"}
    process = setup_script("realserver-setup", env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stderr = interrupt_when(process, lambda line: "building llama-cpp-python" in line, lambda: bool(pip_calls(env)))
    assert process.returncode == 130, stderr
    assert stderr.splitlines()[-1].startswith("realserver-setup: interrupted during: building llama-cpp-python")
    assert list((cache / "wheels").iterdir()) == []  # neither the half wheel nor the folder it was built in
    assert (cache / "SmolLM2-135M-Instruct.Q4_1.gguf").read_bytes() == b"GGUF the model, byte for byte"
    [[pid, *_]] = pip_calls(env)
    assert gone(int(pid))  # the build itself was stopped, not left running


@needs_linux
def test_ctrl_c_inside_the_llama_server_build_reaches_it_and_its_work_folder_goes(
    setup_env: dict[str, str], tmp_path: Path
) -> None:
    cache = tmp_path / "cache" / "ink_py"
    (cache / "llama-server-11434.0.0" / "llama-server").unlink()  # so llama-server-setup downloads and builds
    env = {**setup_env, "SLOW_PIP": "download"}
    process = setup_script("realserver-setup", env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stderr = interrupt_when(
        process, lambda line: "realserver-setup: llama-server" in line, lambda: len(pip_calls(env)) == 3
    )
    assert process.returncode == 130, stderr
    assert stderr.splitlines()[-1].startswith("realserver-setup: interrupted during: llama-server")
    [*_, [pid, _, *download]] = pip_calls(env)
    work = Path(download[download.index("--dest") + 1])
    assert gone(int(pid)) and not work.exists()  # llama-server-setup stopped its step and removed its folder
    assert list((cache / "llama-server-11434.0.0").iterdir()) == []


@needs_linux
def test_ctrl_c_during_the_litellm_install_removes_the_half_made_venv(
    setup_env: dict[str, str], tmp_path: Path
) -> None:
    venv = tmp_path / "cache" / "ink_py" / "litellm-1.106.12"
    (venv / ".installed").unlink()
    env = {**setup_env, "SLOW_PIP": "litellm[proxy]"}
    process = setup_script("litellm-setup", env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    stderr = interrupt_when(process, lambda line: "installing litellm" in line, lambda: len(pip_calls(env)) == 2)
    assert process.returncode == 130, stderr
    assert stderr.splitlines()[-1].startswith("litellm-setup: interrupted during: installing litellm[proxy]")
    assert not venv.exists()
