"""No credential in anything sparkenv writes: a private index on 127.0.0.1 that demands HTTP basic auth,
a secret planted in the index URL (command line, input file, uv's and pip's environment variables) or in
a netrc, then lock, check, `lock --check` and audit in every output format; every file left behind and
every byte printed is searched for the secret. The image half (docker save, every layer) is in
test_credentials_docker.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from artifacts import Index, serve

USER, SECRET = "alice", "s3cretPlanted42"
FORMATS = (("--format", "text"), ("--format", "json"), ("--format", "github"))


@pytest.fixture(scope="module")
def private(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    ix = Index(tmp_path_factory.mktemp("private"))
    ix.wheel("numpy", "2.1.0", tag="cp312-cp312-manylinux_2_17_aarch64")
    ix.wheel("peft", "0.19.1", requires=["numpy"])
    ix.sdist("puresdist", "1.0")  # its metadata comes from the sdist itself: a full authenticated GET
    server = serve(ix, auth=f"{USER}:{SECRET}")
    yield ix
    server.shutdown()


@pytest.fixture
def caches(tmp_path: Path) -> dict[str, str]:
    """uv's cache is uv's; sparkenv's own cache is searched for the secret like the project."""
    return {"UV_CACHE_DIR": str(tmp_path / "uv"), "SPARKENV_CACHE_DIR": str(tmp_path / "proj" / ".cache")}


def _with_secret(url: str) -> str:
    return url.replace("http://", f"http://{USER}:{SECRET}@")


def _sparkenv(cwd: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("UV_INDEX", "PIP_", "UV_DEFAULT"))}
    full.update(env)
    return subprocess.run(
        [sys.executable, "-m", "sparkenv", *args],
        cwd=cwd,
        env=full,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _leaks(root: Path, printed: list[str]) -> list[str]:
    found = [f"printed: {p[:200]!r}" for p in printed if SECRET in p]
    for path in root.rglob("*"):
        if path.is_file() and SECRET.encode() in path.read_bytes():
            found.append(str(path.relative_to(root)))
    return found


def _project(tmp_path: Path, requirements: str) -> Path:
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "requirements.txt").write_text(requirements)
    subprocess.run(["git", "init", "-q", str(proj)], check=True)
    return proj


def _every_stage(proj: Path, index_args: list[str], env: dict[str, str]) -> list[str]:
    """lock, check, lock --check, audit: each in every format with every report file; what was printed."""
    printed: list[str] = []
    reports = proj / "reports"
    reports.mkdir(exist_ok=True)
    r = _sparkenv(proj, "lock", "requirements.txt", *index_args, env=env)
    printed += [r.stdout, r.stderr]
    assert r.returncode == 0, r.stdout + r.stderr
    pylock = next((proj / "lockfiles").glob("pylock.*.toml"))
    runs = [
        ["check", "requirements.txt"],
        ["lock", "--check"],
        ["audit", sys.executable, "--lock", str(pylock.relative_to(proj))],
    ]
    for i, cmd in enumerate(runs):
        for j, fmt in enumerate(FORMATS):
            files = ["--report", f"reports/{i}{j}.json", "--junit", f"reports/{i}{j}.xml"]
            files += ["--sarif", f"reports/{i}{j}.sarif"]
            r = _sparkenv(proj, *cmd, *fmt, *files, env=env)
            printed += [r.stdout, r.stderr]
            assert r.returncode in (0, 1), r.stdout + r.stderr
    return printed


def test_a_secret_in_the_index_url_is_used_and_never_written(private, tmp_path, caches) -> None:  # type: ignore[no-untyped-def]
    proj = _project(tmp_path, "peft\npuresdist\n")
    printed = _every_stage(proj, ["--index-url", _with_secret(private.url)], caches)
    assert _leaks(proj, printed) == []
    # the index is still recorded, without its user-info: pip finds the credential in netrc or its env
    text = (proj / "lockfiles" / "requirements.ngc-25-11.txt").read_text()
    assert f"--index-url {private.url}" in text
    assert "puresdist==1.0" in text  # the sdist's metadata was read through the credential


def test_a_secret_in_the_input_files_is_never_reported(private, tmp_path, caches) -> None:  # type: ignore[no-untyped-def]
    """The secret also sits in a finding's subject (a CUDA-12 index fails G1) and in the inputs."""
    cu12 = _with_secret(private.url.replace("/simple/", "/whl/cu128/"))
    proj = _project(tmp_path, f"--index-url {_with_secret(private.url)}\npeft\n")
    (proj / "bad.txt").write_text(f"--extra-index-url {cu12}\n-r requirements.txt\n")
    printed = []
    for fmt in FORMATS:
        args = ["--report", "r.json", "--junit", "r.xml", "--sarif", "r.sarif"]
        r = _sparkenv(proj, "check", "bad.txt", *fmt, *args, env=caches)
        printed += [r.stdout, r.stderr]
        assert r.returncode == 1 and "cu128" in r.stdout, r.stdout + r.stderr  # the G1 FAIL names the index
    r = _sparkenv(proj, "lock", "bad.txt", env=caches)
    printed += [r.stdout, r.stderr]
    assert r.returncode == 1 and "cu128" in r.stdout, r.stdout + r.stderr
    r = _sparkenv(proj, "lock", "requirements.txt", env=caches)
    printed += [r.stdout, r.stderr]
    assert r.returncode == 0, r.stdout + r.stderr
    leaks = [p for p in _leaks(proj, printed) if p not in ("requirements.txt", "bad.txt")]  # the user's own
    assert leaks == []


@pytest.mark.parametrize("variable", ["UV_INDEX_URL", "PIP_INDEX_URL"])
def test_a_secret_in_uv_or_pips_environment_is_used_and_never_written(  # type: ignore[no-untyped-def]
    private, tmp_path, caches, variable
) -> None:
    proj = _project(tmp_path, "peft\npuresdist\n")
    env = {**caches, variable: _with_secret(private.url)}
    index = ["--index-url", private.url] if variable.startswith("PIP") else []  # uv reads UV_* only
    printed = _every_stage(proj, index, env)
    assert _leaks(proj, printed) == []


def test_a_netrc_serves_the_index_and_nothing_is_written(private, tmp_path, caches) -> None:  # type: ignore[no-untyped-def]
    netrc = tmp_path / "netrc"
    netrc.write_text(f"machine 127.0.0.1 login {USER} password {SECRET}\n")
    proj = _project(tmp_path, "peft\npuresdist\n")
    printed = _every_stage(proj, ["--index-url", private.url], {**caches, "NETRC": str(netrc)})
    assert _leaks(proj, printed) == []


def test_without_a_credential_the_private_index_is_refused(private, tmp_path, caches) -> None:  # type: ignore[no-untyped-def]
    """The index really demands the credential: without one, lock cannot resolve, and says so as a finding
    (a requirement the index refuses is a G9 FAIL, exit 1) that names the refusal, never the credential."""
    proj = _project(tmp_path, "peft\n")
    r = _sparkenv(proj, "lock", "requirements.txt", "--index-url", private.url, env=caches)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "G9 FAIL: peft" in r.stdout and "401 Unauthorized" in r.stdout, r.stdout + r.stderr


def _keyring_stub(folder: Path) -> tuple[Path, Path]:
    """A real `keyring` command on PATH, answering `keyring get SERVICE USER` as the keyring CLI does: the
    password on stdout for the private index's host:port or URL and user alice, else exit 1. Every call
    is logged (the log is outside the project)."""
    bin_dir, log = folder / "bin", folder / "keyring.log"
    bin_dir.mkdir()
    stub = bin_dir / "keyring"
    stub.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> "{log}"\n'
        f'if [ "$1" = get ] && [ "$3" = {USER} ]; then\n'
        f'  case "$2" in 127.0.0.1:*|http://127.0.0.1:*) echo {SECRET}; exit 0;; esac\n'
        "fi\nexit 1\n"
    )
    stub.chmod(0o755)
    return bin_dir, log


@pytest.mark.parametrize("variable", ["UV_KEYRING_PROVIDER", "PIP_KEYRING_PROVIDER"])
def test_a_keyring_completes_a_user_name_and_nothing_is_written(  # type: ignore[no-untyped-def]
    private, tmp_path, caches, variable
) -> None:
    """`--index-url http://alice@host/…` and the keyring command asked, as uv and pip ask it when told to:
    uv resolves through it, and sparkenv's own requests (the sdist's metadata) get the password too."""
    bin_dir, log = _keyring_stub(tmp_path)
    proj = _project(tmp_path, "peft\npuresdist\n")
    user_only = private.url.replace("http://", f"http://{USER}@")
    env = {**caches, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", variable: "subprocess"}
    env["UV_KEYRING_PROVIDER"] = "subprocess"  # uv itself asks the keyring only when told to
    printed = _every_stage(proj, ["--index-url", user_only], env)
    assert _leaks(proj, printed) == []
    text = (proj / "lockfiles" / "requirements.ngc-25-11.txt").read_text()
    assert "puresdist==1.0" in text  # the sdist's metadata, read by sparkenv through the keyring's password
    host = private.url.split("/")[2]
    assert f"get {host} {USER}" in log.read_text().splitlines() or f"get {private.url}" in log.read_text()


def test_sparkenvs_own_requests_ask_the_keyring_only_when_told(private, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """sparkenv's HTTP client alone (no uv): with the switch, a user name is completed by the keyring
    command and the private index answers; without it, the keyring is never started and the index refuses."""
    bin_dir, log = _keyring_stub(tmp_path)
    user_only = private.url.replace("http://", f"http://{USER}@")
    code = (
        "import sys, urllib.request, urllib.error\n"
        "from sparkenv.index import credentials\n"
        "credentials.remember([sys.argv[1]])\n"
        "req = credentials.request(sys.argv[2])\n"
        "try:\n"
        "    print(urllib.request.urlopen(req, timeout=30).status)\n"
        "except urllib.error.HTTPError as e:\n"
        "    print(e.code)\n"
    )
    page = private.url + "peft/"
    base = {k: v for k, v in os.environ.items() if "KEYRING" not in k}
    base["PATH"] = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    for env, status in (({**base, "UV_KEYRING_PROVIDER": "subprocess"}, "200"), (base, "401")):
        r = subprocess.run(
            [sys.executable, "-c", code, user_only, page],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.stdout.strip() == status, r.stdout + r.stderr
        assert SECRET not in r.stdout + r.stderr
    assert log.read_text().count("\n") >= 1 and all(
        ln.startswith("get ") and ln.endswith(f" {USER}") for ln in log.read_text().splitlines()
    )
    calls = log.read_text()
    r = subprocess.run(
        [sys.executable, "-c", code, user_only, page], env=base, capture_output=True, text=True
    )
    assert log.read_text() == calls  # without the switch, no keyring process was started
