"""`blockscope`: the console command. `blockscope dashboard [streamlit options]` starts the app; every other
command (`occupancy`, `inspect`, `sweep`, `export`, ...) is the profiling CLI (`blockscope --help` lists them)."""

from __future__ import annotations

import os
import subprocess
import sys

from blockscope import paths

DASHBOARD_HELP = """usage: blockscope dashboard [STREAMLIT OPTIONS]

Start the Blockscope dashboard (Streamlit) on the bundled H200 dataset. Options are Streamlit's own, e.g.
--server.port 8502, --server.headless true, --server.address 127.0.0.1 (the default: localhost only)."""


def dashboard_command(options: list[str]) -> list[str]:
    """The streamlit command line that serves the router of this installation, with the user's options."""
    command = [sys.executable, "-m", "streamlit", "run", str(paths.PACKAGE_DIR / "dashboard" / "app.py")]
    if not any(o.startswith("--server.address") for o in options):
        command.append("--server.address=localhost")
    return command + options


def main(argv: list[str] | None = None) -> int:
    """Run `blockscope ARGS`; the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["dashboard"]:
        options = argv[1:]
        if any(o in ("-h", "--help") for o in options):
            print(DASHBOARD_HELP)
            return 0
        command = dashboard_command(options)
        if os.name == "posix":  # become the server: a signal to this pid (kill, a supervisor) stops Streamlit itself
            sys.stdout.flush()
            sys.stderr.flush()
            os.execv(command[0], command)
        try:  # elsewhere a child process, waited for
            return subprocess.call(command, env=dict(os.environ))
        except KeyboardInterrupt:
            return 130
    from blockscope.profiling.cli.main import main as profiling_main

    return profiling_main(argv, prog="blockscope")


if __name__ == "__main__":
    sys.exit(main())
