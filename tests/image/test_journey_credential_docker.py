"""The whole workflow on a custom base, from a plain folder and from a git repository: a profile from the
stand-in base (`profiles new --from-image`), check → lock → lock --check → build → `docker run` with the
gate in front of a workload → audit inside the image, against a private index on 127.0.0.1 whose
credential (user:token in UV_EXTRA_INDEX_URL, as uv reads it) sparkenv is given only in its environment.
Afterwards the credential is nowhere: not in a file either run wrote, not in anything printed, not in an
image or its history, not under the engine's data root (every layer, intermediate image and BuildKit's
cache), and not on any process's command line while the workflow ran.

Both folders lock the same requirements for the same profile: the second build reuses the first one's
layers (one image, built once), so the second journey costs little more than its own commands."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

import artifacts
import build_helpers as bh
import pytest
from test_build_secret_docker import _CommandLines, _engine_root, _holding, _images

pytestmark = pytest.mark.docker
TAG = "sparkenv-test/journey-credential:1"


def _findings(out: str) -> dict[tuple[str, str], tuple[str, str]]:
    return {(f["id"], f["subject"]): (f["status"], f["summary"]) for f in json.loads(out)["findings"]}


def test_the_workflow_from_a_plain_folder_and_a_git_repository_leaves_the_credential_nowhere(
    tmp_path: Path,
) -> None:
    client = bh.engine_or_skip()
    bh.ensure_standin(client)
    root = _engine_root(client)
    if root is None:
        bh.skip_unless_required("the engine's data root is not readable here (a remote engine or not root)")
    user, token = "journey", "tok" + secrets.token_hex(12)  # fresh: an older run's leftovers cannot match
    ix = artifacts.Index(tmp_path / "index", pep658=False)
    ix.wheel("tinydep", "1.2.0")
    ix.wheel("tinypkg", "1.0.0", requires=["tinydep>=1"])
    server = artifacts.serve(ix, auth=f"{user}:{token}")
    written = [tmp_path / name for name in ("plain", "repo", "cache", "uv-cache", "tmp", "home")]
    for folder in written:
        folder.mkdir()
    plain, repo, cache, uv_cache, temp, home = written
    drop = ("VIRTUAL_ENV", "NETRC", "PYTHONPATH", "NO_COLOR", "FORCE_COLOR")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(
        PYTHONPATH=str(Path(__file__).resolve().parents[2]),  # this checkout's sparkenv
        UV_EXTRA_INDEX_URL=ix.url.replace("http://", f"http://{user}:{token}@"),
        UV_CACHE_DIR=str(uv_cache),
        SPARKENV_CACHE_DIR=str(cache),
        TMPDIR=str(temp),
        HOME=str(home),
        PIP_CERT="",
        SSL_CERT_FILE="",
    )
    printed: list[str] = []

    def sparkenv(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [sys.executable, "-m", "sparkenv", *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=900,
            cwd=cwd,
            env=env,
        )
        printed.extend([proc.stdout, proc.stderr])
        return proc

    def docker_run(*args: str) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(["docker", "run", "--rm", *args], capture_output=True, text=True, timeout=300)
        printed.extend([proc.stdout, proc.stderr])
        return proc

    watcher = _CommandLines(token.encode())
    before = _images()
    ids = []
    try:
        watcher.start()
        # the profile of the custom base, with what it found about PEP 668 (Debian's python3 is managed)
        new = sparkenv("profiles", "new", "standin", "--from-image", bh.STANDIN_TAG, cwd=plain)
        assert new.returncode == 0, new.stdout + new.stderr
        assert "PEP 668: python3 is externally managed" in new.stdout
        assert "PIP_BREAK_SYSTEM_PACKAGES=1" in new.stdout
        profile_text = (plain / "standin.toml").read_text()
        assert "# PEP 668: python3 is externally managed (/usr/lib/python3.11/EXTERNALLY-MANAGED" in (
            profile_text
        )
        assert subprocess.run(["git", "init", "-q"], cwd=repo, timeout=60).returncode == 0
        # the requirements name the index without its credential (as committed); the credential is in
        # UV_EXTRA_INDEX_URL alone
        requirements = f"--index-url {ix.url}\ntinypkg\n"
        for folder in (plain, repo):
            (folder / "requirements.txt").write_text(requirements)
            (folder / "standin.toml").write_text(profile_text)

        for folder in (plain, repo):
            where = folder.name
            if folder is plain:
                check = sparkenv("check", "-", "--profile", "standin.toml", cwd=folder, stdin=requirements)
            else:
                check = sparkenv("check", "-r", "requirements.txt", "--profile", "standin.toml", cwd=folder)
            assert check.returncode == 0, f"{where}: {check.stdout}{check.stderr}"
            named = ["requirements.txt"] if folder is plain else ["-r", "requirements.txt"]  # either way
            lock = sparkenv("lock", *named, "--profile", "standin.toml", cwd=folder)
            assert lock.returncode == 0, f"{where}: {lock.stdout[-3000:]}{lock.stderr[-3000:]}"
            pylock = folder / "lockfiles" / "pylock.standin.toml"
            assert 'name = "tinydep"' in pylock.read_text(), where  # resolved through the credential
            current = sparkenv("lock", "--check", "--json", cwd=folder)
            assert current.returncode == 0, f"{where}: {current.stdout}{current.stderr}"
            assert _findings(current.stdout) == {
                ("G9", "lockfiles/pylock.standin.toml"): (
                    "PASS",
                    "lockfiles/pylock.standin.toml is current with requirements.txt (standin)",
                )
            }
            build = sparkenv(
                "build", "--platform", "linux/amd64", "--network", "host", "--tag", TAG, "-q", cwd=folder
            )
            assert build.returncode == 0, f"{where}: {build.stdout[-3000:]}{build.stderr[-3000:]}"
            ids.append(client.images.get(TAG).id)
            workload = "import tinypkg; print('workload ran', tinypkg.__version__)"
            ran = docker_run(TAG, "python3", "-c", workload)
            assert ran.returncode == 0 and "workload ran 1.0.0" in ran.stdout, f"{where}: {ran.stderr}"
            assert "verdict:" in ran.stderr  # the gate judged before the workload started
            audit = docker_run(
                "--entrypoint", "sparkenv", TAG, "audit", "--json", "--lock", "/opt/sparkenv/pylock.toml"
            )
            assert audit.returncode == 0, f"{where}: {audit.stdout[-2000:]}{audit.stderr[-2000:]}"
            # the image keeps the lock's profile file: it compares its own lock with it
            status, summary = _findings(audit.stdout)[("G9", "profile")]
            assert status == "PASS" and "unchanged since" in summary, summary
        watcher.stop.set()
        watcher.join()

        # --- the credential: used, and nowhere afterwards ------------------------------------------------
        assert any(p.startswith("/simple/tinypkg") for p, _ in server.requests)  # type: ignore[attr-defined]
        assert ids[0] == ids[1]  # one image for both folders: the second build reused every layer
        assert [p for p in printed if token in p] == []
        assert watcher.seen == []
        leaks = [
            str(p)
            for folder in written
            for p in folder.rglob("*")
            if p.is_file() and not p.is_symlink() and token.encode() in p.read_bytes()
        ]
        assert leaks == []
        for image_id in (_images() - before) | {ids[0]}:
            image = client.images.get(image_id)
            assert token not in repr(image.attrs) and token not in repr(image.history()), image_id
        assert _holding(root, token) == []  # every layer, intermediate image and build-cache record
    finally:
        watcher.stop.set()
        server.shutdown()
        subprocess.run(["docker", "rmi", "-f", TAG], capture_output=True, timeout=120)
        shutil.rmtree(uv_cache, ignore_errors=True)
