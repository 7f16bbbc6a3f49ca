"""A new user's first minute. The README's first command, read out of the README (so the two cannot
drift), run as printed on a real externally-managed system Python (Debian bookworm's python3, which
refuses `pip install` outside a venv, PEP 668), in a container of the test rootfs. And the audit's first
line on a terminal, read through a real pseudo-terminal: which interpreter and environment it read."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import shlex
import subprocess
import sys
import time
from pathlib import Path

import build_helpers as bh
import pytest

REPO = Path(__file__).resolve().parents[1]


def readme_first_command() -> str:
    """The first line of the README's first bash block (its trailing comment dropped)."""
    block = re.search(r"```bash\n(.*?)```", (REPO / "README.md").read_text(), re.S)
    assert block, "the README has no bash block"
    first = block.group(1).splitlines()[0]
    return re.sub(r"\s+#[^\"']*$", "", first).strip()


@pytest.mark.docker
@pytest.mark.network
def test_the_readmes_first_command_works_on_an_externally_managed_system_python() -> None:
    client = bh.engine_or_skip()
    try:
        client.images.get(bh.ROOTFS_TAG)
    except Exception:
        bh.ensure_standin(client)  # builds the rootfs on the way
    command = readme_first_command()
    assert "sparkenv" in command and "audit" in command, command
    # the host's pip settings (a TLS-intercepting proxy's CA, a local wheel folder) reach the container
    args = ["docker", "run", "--rm", "--network", "host", "-v", f"{REPO}:/src:ro"]
    for name in ("PIP_CERT", "PIP_FIND_LINKS", "PIP_INDEX_URL", "PIP_DEFAULT_TIMEOUT"):
        value = os.environ.get(name)
        if value:
            args += ["-e", f"{name}={value}"]
            if Path(value).exists():
                args += ["-v", f"{value}:{value}:ro"]
    # the checkout copied without its venvs and build outputs, as a fresh clone has it
    prepare = "mkdir /tmp/sparkenv && cd /src && tar --exclude=./.venv --exclude=./.git -cf - ."
    prepare += " | tar -C /tmp/sparkenv -xf -"
    script = (
        f"set -e; {prepare}; cd /tmp/sparkenv; "
        "test -f /usr/lib/python3.11/EXTERNALLY-MANAGED; "
        # the control: this interpreter really refuses a plain pip install
        "if python3 -m pip install --dry-run . >/tmp/refused 2>&1; then echo NOT-MANAGED; exit 9; fi; "
        "grep -q externally-managed-environment /tmp/refused; "
        f"bash -c {shlex.quote(command)} && rc=0 || rc=$?; "
        # what it read, as JSON: the command's last step (the audit) again with --json
        f"echo JSON; bash -c {shlex.quote(command.split('&&')[-1] + ' --json')} || true; exit $rc"
    )
    proc = subprocess.run(
        [*args, bh.ROOTFS_TAG, "bash", "-c", script], capture_output=True, text=True, timeout=900
    )
    assert proc.returncode in (0, 1), f"{command}\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}"
    text, _, as_json = proc.stdout.partition("\nJSON\n")
    assert "G1 INFO: read " in text and re.search(r"^verdict: ", text, re.M), text
    read = json.loads(as_json)["context"]["read"]
    assert read.startswith("/usr/bin/python3") and "/.sparkenv/" not in read, (
        read
    )  # the system's, not its own


def test_the_audits_first_line_on_a_terminal_names_what_it_read(tmp_path: Path) -> None:
    """stderr a real terminal: the first line says what was read; stdout (a pipe) keeps the contract."""
    leader, follower = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "sparkenv", "audit", sys.executable],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=follower,
        env={**env, "TERM": "xterm", "SPARKENV_CACHE_DIR": str(tmp_path / "cache")},
    )
    os.close(follower)
    seen = b""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 1.0)
        if not ready:
            if proc.poll() is not None:
                break
            continue
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the other side closed: the process is done with the terminal
            break
        if not chunk:
            break
        seen += chunk
    stdout = proc.communicate(timeout=120)[0].decode()
    os.close(leader)
    first = seen.decode(errors="replace").splitlines()[0] if seen else ""
    assert first.startswith("sparkenv audit: read "), seen[:500]
    assert sys.executable in first or str(Path(sys.executable).resolve()) in first, first
    assert re.search(r"\d+ distributions", first), first
    # stdout is not the terminal: findings, then the verdict, and no such line
    assert "sparkenv audit: read" not in stdout and stdout.rstrip().splitlines()[-1].startswith("verdict: ")
