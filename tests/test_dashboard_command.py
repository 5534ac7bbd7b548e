"""`blockscope dashboard`: one process on POSIX, so stopping it stops the server (a wrapper that ran Streamlit as a
child left the server running when the wrapper was killed)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from blockscope import cli

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def test_dashboard_replaces_itself_with_streamlit_on_posix(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, list[str]]] = []

    class Replaced(Exception):  # os.execv never returns: the process is Streamlit from then on
        pass

    def execv(path: str, args: list[str]) -> None:
        calls.append((path, list(args)))
        raise Replaced

    monkeypatch.setattr(cli.os, "name", "posix")
    monkeypatch.setattr(cli.os, "execv", execv)
    monkeypatch.setattr(cli.subprocess, "call", lambda *a, **k: pytest.fail("ran Streamlit as a child process"))
    with pytest.raises(Replaced):
        cli.main(["dashboard", "--server.port", "8599"])
    ((path, args),) = calls
    assert path == sys.executable and args == cli.dashboard_command(["--server.port", "8599"])
    assert "--server.address=localhost" in args


@pytest.mark.skipif(os.name != "posix", reason="one process on POSIX only")
def test_stopping_the_dashboard_process_stops_the_server(tmp_path: Path) -> None:
    port = _free_port()
    url = f"http://localhost:{port}"
    env = {**os.environ, "BLOCKSCOPE_CACHE_DIR": str(tmp_path), "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, "-m", "blockscope", "dashboard", "--server.port", str(port)]
    command += ["--server.headless", "true", "--browser.gatherUsageStats", "false"]
    with (tmp_path / "server.log").open("w") as log:
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            deadline = time.monotonic() + 60
            while not _healthy(url):
                assert process.poll() is None, (tmp_path / "server.log").read_text()[-2000:]
                assert time.monotonic() < deadline, "the server did not start in 60 s"
                time.sleep(0.3)
            process.terminate()
            process.wait(timeout=15)
            deadline = time.monotonic() + 10
            while _healthy(url) and time.monotonic() < deadline:
                time.sleep(0.3)
            assert not _healthy(url), "the server outlived the process that was stopped"
        finally:  # whatever outlived it (a Streamlit child, on failure) goes with its process group
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
