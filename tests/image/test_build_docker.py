"""`sparkenv build` against a real Docker engine, on the NGC-like stand-in base (tests/build_helpers.py).

The locks hold small real wheels served from a local PEP 503 index on 127.0.0.1. The build's RUN steps
reach that index only with `--network host` (in the default bridge network 127.0.0.1 is the container's
own), so these builds pass it; users building against PyPI or a mirror do not need it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import artifacts
import build_helpers as bh
import pytest

pytestmark = pytest.mark.docker
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def engine():  # type: ignore[no-untyped-def]
    client = bh.engine_or_skip()
    bh.ensure_standin(client)
    return client


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory, kernels) -> dict[str, Path]:  # type: ignore[no-untyped-def]
    """Small real wheels; two carry real extensions nvcc builds (conftest's `kernels`, once a session)."""
    d = tmp_path_factory.mktemp("wheels")
    return {
        "ext-hopper": artifacts.write_wheel(
            d,
            "ext-hopper",
            "1.0",
            {"ext_hopper/__init__.py": "", "ext_hopper/_C.abi3.so": kernels.so("sm90").read_bytes()},
        ),
        "ext-spark": artifacts.write_wheel(
            d,
            "ext-spark",
            "1.0",
            {"ext_spark/__init__.py": "", "ext_spark/_C.abi3.so": kernels.so("sm120").read_bytes()},
        ),
        "tinypkg": artifacts.write_wheel(
            d, "tinypkg", "1.0", {"tinypkg/__init__.py": "GREETING = 'hello from tinypkg'\n"}
        ),
        "unsloth": artifacts.write_wheel(d, "unsloth", "2026.7.2"),
        "torch": artifacts.write_wheel(d, "torch", "2.9.1"),
        "cupy": artifacts.write_wheel(d, "cupy-cuda12x", "13.6.0", {"cupy/__init__.py": ""}),
        # Holds the image's own audit (and only it) for 5 minutes: a .pth runs at every Python start-up,
        # and the verification container's command line is the only one with `audit --json`.
        "slowaudit": artifacts.write_wheel(
            d,
            "slowaudit",
            "1.0",
            {
                "slowaudit.pth": 'import sys, time; "audit" in sys.orig_argv and "--json" in sys.orig_argv '
                "and time.sleep(300)\n",
                "slowaudit_mod/__init__.py": "",
            },
        ),
    }


@pytest.fixture(scope="module")
def index(wheels: dict[str, Path]) -> Iterator[str]:
    with artifacts.serve_index(list(wheels.values())) as url:
        yield url


def build_argv(lock: Path, *extra: str, base: str = bh.STANDIN_TAG) -> list[str]:
    """`sparkenv build` of `lock` on the stand-in profile and base, for linux/amd64."""
    return [
        sys.executable,
        "-m",
        "sparkenv",
        "build",
        "--lock",
        str(lock),
        "--profile",
        str(lock.parent / "standin.toml"),
        "--base",
        base,
        "--platform",
        "linux/amd64",
        *extra,
    ]


def build(lock: Path, tag: str, *extra: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        build_argv(lock, "--network", "host", "--tag", tag, *extra),
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
        env={**os.environ, "PIP_CERT": "", "SSL_CERT_FILE": ""},
    )


def tags(client, ref: str) -> bool:  # type: ignore[no-untyped-def]
    from docker.errors import ImageNotFound

    try:
        client.images.get(ref)
        return True
    except ImageNotFound:
        return False


def container_ids(client) -> set[str]:  # type: ignore[no-untyped-def]
    """Every container's ID, by the engine's list call alone: no per-container inspect that a container
    removed meanwhile (another build on a shared engine) would turn into NotFound."""
    return {c["Id"] for c in client.api.containers(all=True)}


def leftovers(client) -> list[str]:  # type: ignore[no-untyped-def]
    """Verification containers still there. Engines on a shared machine also run other people's builds,
    whose verification containers live for seconds: wait for those to go; one left behind stays."""
    for _ in range(30):
        found = [
            c["Names"][0] for c in client.api.containers(all=True, filters={"label": "io.sparkenv.verify=1"})
        ]
        if not found:
            break
        time.sleep(1)
    return found


def same_gate_either_way(ref: str) -> None:
    """The image's gate starts without site (sparkenv.sh: python3 -I -S, gate/launcher.py): inside the
    image it judges the base's interpreter (Debian's dist-packages, the stand-in's torch and CUDA
    runtime) exactly as when started with site, as the image started it before (python3 -I)."""
    before = (
        "import sys; sys.argv[0] = 'sparkenv'; sys.path.insert(0, '/opt/sparkenv/lib'); "
        "from sparkenv.cli.entry import main; main()"
    )
    reports = {}
    for name, argv in (
        ("image", ["--entrypoint", "/usr/local/bin/sparkenv", ref, "gate", "--json"]),
        ("site", ["--entrypoint", "python3", ref, "-I", "-c", before, "gate", "--json"]),
    ):
        proc = subprocess.run(["docker", "run", "--rm", *argv], capture_output=True, text=True, timeout=120)
        assert proc.returncode in (0, 1), proc.stderr
        reports[name] = json.loads(proc.stdout)

    def judged(report: dict) -> list[tuple[str, str, str, str]]:  # G3's and G4's summaries are readings
        return sorted(
            (f["id"], f["status"], f["subject"], "" if f["id"] in ("G3", "G4") else f["summary"])
            for f in report["findings"]
        )

    assert judged(reports["image"]) == judged(reports["site"])
    assert any(f["id"] == "G1" and f["subject"] == "torch" for f in reports["image"]["findings"])


def test_build_run_and_rebuild(engine, wheels, index, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    lock = bh.write_lock(
        tmp_path, index, {"1-packages": [wheels["tinypkg"]], "2-unsloth": [wheels["unsloth"]]}, bh.STANDIN_TAG
    )
    ref = "sparkenv-test/app:ok"
    if tags(engine, ref):
        engine.images.remove(ref, force=True)
    first = build(lock, ref)
    assert first.returncode == 0, first.stderr[-3000:] + first.stdout
    assert f"tagged {ref}" in first.stdout
    assert "step 1/" in first.stderr  # progress: step n/N
    img = engine.images.get(ref)
    labels = img.labels
    assert labels["io.sparkenv.profile"] == "standin"
    assert labels["io.sparkenv.lock-hash"].startswith("sha256:")
    assert labels["io.sparkenv.base-digest"] == engine.images.get(bh.STANDIN_TAG).id
    assert img.attrs["Architecture"] == "amd64"
    report = tmp_path / "image-audit.standin.json"
    assert '"schema": "sparkenv.core.report/1"' in report.read_text()
    assert leftovers(engine) == []

    # Run it: the gate's lines, NGC's entrypoint parts, then the workload with its output and exit status.
    run = subprocess.run(
        [
            "docker",
            "run",
            "--rm",
            ref,
            "python3",
            "-c",
            "import os, sys, tinypkg;"
            "print(tinypkg.GREETING, os.environ.get('NGC_STANDIN_PART')); sys.exit(7)",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 7, run.stderr
    assert "hello from tinypkg sourced" in run.stdout
    assert "entrypoint.d: 20-env.sh sourced" in run.stdout and "NGC stand-in" in run.stdout
    assert any(line.startswith(("G1 ", "G3 ", "G7 ", "G9 ")) for line in run.stderr.splitlines()), run.stderr
    same_gate_either_way(ref)

    # An unchanged rebuild: every step cached, verification included, the same image.
    again = build(lock, ref)
    assert again.returncode == 0, again.stderr[-2000:]
    assert engine.images.get(ref).id == img.id
    steps = int(again.stderr.split("step 1/")[1].split(":")[0])
    # FROM steps and the metadata-only steps print no "Using cache"; everything that runs or copies does
    assert again.stderr.count("    cached") >= steps - 8, again.stderr


def test_a_lock_replacing_a_base_package_fails_the_build_and_tags_nothing(
    engine, wheels, index, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    lock = bh.write_lock(
        tmp_path, index, {"1-packages": [wheels["tinypkg"], wheels["torch"]]}, bh.STANDIN_TAG
    )
    ref = "sparkenv-test/app:replaced"
    proc = build(lock, ref, "-q")
    assert proc.returncode == 1, proc.stderr
    # the findings are the build's report on stdout, rendered as every report is; stderr keeps one line
    (error,) = proc.stderr.strip().splitlines()
    assert error.startswith("sparkenv build: build failed at step ") and "base_check.py compare" in error
    assert error.endswith(f"nothing was tagged ({ref})") and "G9" not in error, error
    # base_check.py printed facts only; the line is the registry's (rules/g9.py, Stage.IMAGE), fix included
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("G9 FAIL: "))
    ngc_torch = bh.PROVIDES["torch"]
    assert line.startswith(f"G9 FAIL: a package the base provides was replaced: torch {ngc_torch} -> 2.9.1; ")
    from sparkenv.facts import image as base_facts
    from sparkenv.render.text import finding_line
    from sparkenv.rules import g9_lock_and_image

    replaced = base_facts.Change("torch", (ngc_torch,), ("2.9.1",))
    (expected,) = [
        f
        for f in g9_lock_and_image.image(base_facts.BaseCheck(("torch",), (replaced,), ()))
        if f.subject == "torch"
    ]
    assert line == finding_line(expected)
    assert proc.stdout.strip().splitlines()[-1].startswith("verdict: blocked")
    assert "sparkenv-base-check {" not in proc.stdout + proc.stderr  # the facts line itself is not shown
    assert not tags(engine, ref) and leftovers(engine) == []

    # --format json: the same finding in the versioned report (every step cached: only the failing one runs)
    as_json = build(lock, ref, "-q", "--format", "json")
    assert as_json.returncode == 1 and len(as_json.stderr.strip().splitlines()) == 1, as_json.stderr
    data = json.loads(as_json.stdout)
    assert data["command"] == "build" and data["verdict"] == "blocked" and data["context"]["tagged"] is False
    (torch,) = [f for f in data["findings"] if f["subject"] == "torch"]
    assert torch["status"] == "FAIL" and torch["summary"] == expected.summary


def test_an_image_whose_audit_fails_stays_untagged(engine, wheels, index, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    lock = bh.write_lock(tmp_path, index, {"1-packages": [wheels["tinypkg"], wheels["cupy"]]}, bh.STANDIN_TAG)
    ref = "sparkenv-test/app:cuda12"
    proc = build(lock, ref, "-q")
    assert proc.returncode == 1, proc.stderr
    assert "G1 FAIL: cupy-cuda12x 13.6.0 needs CUDA 12" in proc.stdout
    assert f"NOT tagged {ref}" in proc.stdout
    assert '"status": "FAIL"' in (tmp_path / "image-audit.standin.json").read_text()
    assert not tags(engine, ref) and leftovers(engine) == []

    # The same reporting options as every command (steps cached: only the audit runs again).
    from importlib import resources

    import jsonschema

    schema = json.loads(resources.files("sparkenv").joinpath("data", "report.schema.json").read_text())
    files = {ext: tmp_path / f"build.{ext}" for ext in ("xml", "json", "sarif")}
    again = build(
        lock,
        ref,
        *("-q", "--json", "--junit", str(files["xml"]), "--report", str(files["json"])),
        *("--sarif", str(files["sarif"])),
    )
    assert again.returncode == 1 and f"NOT tagged {ref}" in again.stderr, again.stderr
    data = json.loads(again.stdout)
    jsonschema.validate(data, schema)
    assert data["command"] == "build" and data["context"]["tagged"] is False
    assert json.loads(files["json"].read_text()) == data
    assert "cupy-cuda12x" in files["xml"].read_text() and "cupy-cuda12x" in files["sarif"].read_text()
    # a waived FAIL is shown as waived and the image is tagged: the tag follows the report as shown
    waived = f"{ref}-g1-waived"
    proc = build(lock, waived, "-q", "--json", "--waive", "G1:cupy-cuda12x")
    try:
        assert proc.returncode == 0 and f"tagged {waived}" in proc.stderr, proc.stderr
        [cupy] = [f for f in json.loads(proc.stdout)["findings"] if f["subject"] == "cupy-cuda12x"]
        assert cupy["status"] == "INFO" and cupy["summary"].startswith("waived FAIL:"), cupy
    finally:
        if tags(engine, waived):
            engine.images.remove(waived, force=True)
    # --ignore takes G1 out of the verdict, so the image is tagged: the tag follows the exit code
    ignored = f"{ref}-g1-ignored"
    proc = build(lock, ignored, "-q", "--ignore", "G1")
    try:
        assert proc.returncode == 0 and f"tagged {ignored}" in proc.stdout, proc.stderr
        assert not any(ln.startswith("G1 ") for ln in proc.stdout.splitlines())
    finally:
        if tags(engine, ignored):
            engine.images.remove(ignored, force=True)


def test_an_image_whose_kernels_cannot_run_on_the_gpu_stays_untagged(
    engine, wheels, index, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """G7 in the image's self-audit: an extension with sm_90 code only cannot run on the GB10 (the
    default target), so the image is not tagged; the same image with an sm_120 extension is."""
    lock = bh.write_lock(
        tmp_path, index, {"1-packages": [wheels["ext-hopper"], wheels["ext-spark"]]}, bh.STANDIN_TAG
    )
    ref = "sparkenv-test/app:kernels"
    proc = build(lock, ref, "-q")
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "G7 FAIL: ext-hopper 1.0 (ext_hopper/_C.abi3.so) cannot run on GB10 (12.1)" in proc.stdout, (
        proc.stdout
    )
    assert f"NOT tagged {ref}" in proc.stdout
    assert not tags(engine, ref)
    spark = tmp_path / "spark"
    spark.mkdir()
    lock = bh.write_lock(spark, index, {"1-packages": [wheels["ext-spark"]]}, bh.STANDIN_TAG)
    proc = build(lock, ref, "-q")
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    report = json.loads((spark / "image-audit.standin.json").read_text())
    g7 = {f["subject"]: f["status"] for f in report["findings"] if f["id"] == "G7"}
    assert g7["ext-spark"] == "PASS"
    assert tags(engine, ref)
    engine.images.remove(ref)


def test_a_broken_step_shows_the_step_and_its_log(engine, wheels, index, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    lock = bh.write_lock(tmp_path, index, {"1-packages": [wheels["tinypkg"]]}, bh.STANDIN_TAG)
    good = bh.hashlib.sha256(wheels["tinypkg"].read_bytes()).hexdigest()
    for part in (lock, tmp_path / "requirements.standin.txt"):  # both: the lock reader checks they agree
        part.write_text(part.read_text().replace(good, "0" * 64))  # a hash that does not match the wheel
    proc = build(lock, "sparkenv-test/app:broken", "-q")
    assert proc.returncode == 1
    assert "build failed at step" in proc.stderr and "pip download" in proc.stderr
    assert "DO NOT MATCH THE HASHES" in proc.stderr  # pip's own log line from inside the step
    assert "Traceback" not in proc.stderr.split("    |")[0]


def test_no_permission_on_the_socket_is_exit_3(engine) -> None:  # type: ignore[no-untyped-def]
    """A real permission error: a forked child drops to user nobody, then connects to the root socket."""
    if os.geteuid() != 0:
        pytest.skip("needs root to drop privileges")
    from sparkenv.core.errors import ServiceMissing
    from sparkenv.image import engine as eng

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never returns into pytest
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            try:
                eng.connect()
                msg = "connected"
            except ServiceMissing as exc:
                msg = f"{exc.exit_code} {exc}"
            os.write(write, msg.encode())
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    with os.fdopen(read) as fh:
        msg = fh.read()
    assert msg.startswith("3 no permission on the Docker socket"), msg
    assert "docker group" in msg


def test_an_absent_base_without_a_registry_says_pull_or_base(engine, wheels, index, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    lock = bh.write_lock(tmp_path, index, {"1-packages": [wheels["tinypkg"]]}, bh.STANDIN_TAG)
    proc = subprocess.run(
        build_argv(lock, "-q", base="registry.invalid/sparkenv/absent:1"),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert proc.returncode == 3, proc.stderr
    assert "docker pull registry.invalid/sparkenv/absent:1" in proc.stderr and "--base IMAGE" in proc.stderr
    assert proc.stderr.count("\n") == 1


@contextlib.contextmanager
def build_stuck_in_a_step(
    engine, wheels, tmp_path: Path, ref: str, env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[str]]:  # type: ignore[no-untyped-def]
    """`sparkenv build` running, its first RUN step waiting on a slow index (2 minutes a request)."""
    if tags(engine, ref):
        engine.images.remove(ref, force=True)
    with artifacts.serve_index([wheels["tinypkg"]], delay=120) as slow:
        lock = bh.write_lock(tmp_path, slow, {"1-packages": [wheels["tinypkg"]]}, bh.STANDIN_TAG)
        cmd = build_argv(lock, "--network", "host", "--no-cache", "--tag", ref)
        proc = subprocess.Popen(
            cmd,
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PIP_CERT": "", "SSL_CERT_FILE": "", **(env or {})},
            # the build starts as from a terminal: a pytest run under nohup, or as a background job,
            # would hand it SIGHUP/SIGINT ignored, which sparkenv keeps ignored on purpose (signals.py)
            preexec_fn=artifacts.default_dispositions,
        )
        seen = ""
        deadline = time.monotonic() + 300
        while "pip download" not in seen and time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line:
                break
            seen += line
        assert "pip download" in seen, seen[-2000:]
        time.sleep(2)  # the step is running, its container waiting on the slow index
        try:
            yield proc
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def no_container_left(engine, before: set[str]) -> bool:  # type: ignore[no-untyped-def]
    """The engine notices the client left, cancels the step and removes its container (forcerm)."""
    for _ in range(60):
        if container_ids(engine) <= before:
            return True
        time.sleep(1)
    return False


@pytest.mark.parametrize(
    ("signum", "code", "said"),
    [
        (signal.SIGINT, 130, "sparkenv: interrupted"),  # Ctrl-C
        (signal.SIGTERM, 143, "sparkenv: terminated (SIGTERM)"),  # docker stop, systemd, a CI runner
        (signal.SIGHUP, 129, "sparkenv: terminated (SIGHUP)"),  # the terminal went away
    ],
)
def test_a_signal_during_the_build_moves_no_tag_and_leaves_no_container(  # type: ignore[no-untyped-def]
    engine, wheels, tmp_path: Path, signum: int, code: int, said: str
) -> None:
    """A real signal while a RUN step waits on a slow index: exit 128+N, no tag, no container left."""
    before = container_ids(engine)
    ref = f"sparkenv-test/app:interrupted-{os.getpid()}"  # unique: engines may be shared
    with build_stuck_in_a_step(engine, wheels, tmp_path, ref) as proc:
        proc.send_signal(signum)
        _out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err[-2000:]
    last = err.strip().splitlines()[-1]
    assert last == f"{said}; no tag moved ({ref})" and "Traceback" not in err, err[-2000:]
    assert not tags(engine, ref)
    assert no_container_left(engine, before)


def test_sigterm_during_the_image_audit_removes_its_container_and_moves_no_tag(  # type: ignore[no-untyped-def]
    engine, wheels, index, tmp_path: Path
) -> None:
    """The repro of issue 11 item 2: SIGTERM while the verification container runs left it behind."""
    ref = f"sparkenv-test/app:verify-sigterm-{os.getpid()}"  # unique: engines are shared
    old = engine.images.get(bh.STANDIN_TAG)
    old.tag(ref)  # an older image holds the tag: it must still hold it afterwards
    lock = bh.write_lock(tmp_path, index, {"1-packages": [wheels["slowaudit"]]}, bh.STANDIN_TAG)
    proc = subprocess.Popen(
        build_argv(lock, "--network", "host", "--tag", ref, "-q"),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PIP_CERT": "", "SSL_CERT_FILE": ""},
    )
    # this build's verification container (others may run beside it on a shared engine): it carries
    # the image's labels, the lock's hash among them
    mine = [
        "io.sparkenv.verify=1",
        f"io.sparkenv.lock-hash=sha256:{hashlib.sha256(lock.read_bytes()).hexdigest()}",
    ]
    err = bh.sigterm_when(proc, lambda: bool(engine.api.containers(filters={"label": mine})), 600)
    assert proc.returncode == 143, err[-2000:]
    last = err.strip().splitlines()[-1]
    assert last.startswith("sparkenv: terminated (SIGTERM); "), err
    assert "; removed the verification container " in last and f"; no tag moved ({ref})" in last
    assert "Traceback" not in err
    assert engine.api.containers(all=True, filters={"label": mine}) == []
    assert engine.images.get(ref).id == old.id
    engine.images.remove(ref)


def test_the_engine_going_away_mid_build_is_exit_3_and_tags_nothing(engine, wheels, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The client's connection to the engine is cut for real mid-step: sparkenv talks to the engine
    through a relay socket that the test closes, which is what a stopped dockerd looks like from the
    client (the real engine itself is shared with the other tests, so it is not stopped)."""
    import socket
    import threading

    relay_path = tmp_path / "docker.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(relay_path))
    listener.listen(16)
    conns: list[socket.socket] = []
    stop = threading.Event()

    def pump(src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def accept() -> None:
        while not stop.is_set():
            try:
                client, _ = listener.accept()
            except OSError:
                return
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            upstream.connect("/var/run/docker.sock")
            conns.extend((client, upstream))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=pump, args=(a, b), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    before = container_ids(engine)
    ref = "sparkenv-test/app:engine-gone"
    with build_stuck_in_a_step(
        engine, wheels, tmp_path, ref, {"DOCKER_HOST": f"unix://{relay_path}"}
    ) as proc:
        stop.set()
        listener.close()
        for c in conns:  # the engine "goes away"
            with contextlib.suppress(OSError):
                c.shutdown(socket.SHUT_RDWR)
            c.close()
        _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 3, err[-2000:]
    assert "the Docker engine went away" in err and "Traceback" not in err
    assert not tags(engine, ref)
    assert no_container_left(engine, before)


def test_sdpa_build_installs_the_override_the_image_python_loads(
    engine, wheels, index, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    lock = bh.write_lock(
        tmp_path, index, {"1-packages": [wheels["tinypkg"]], "2-unsloth": [wheels["unsloth"]]}, bh.STANDIN_TAG
    )
    ref = "sparkenv-test/app:sdpa"
    proc = build(lock, ref, "--sdpa", "-q")
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout
    assert engine.images.get(ref).labels["io.sparkenv.sdpa"] == "true"
    probe = (
        "import json, sys, _sparkenv_sdpa; s = _sparkenv_sdpa.status(); "
        "print(json.dumps({k: s[k] for k in ('installed', 'active', 'installed_by')}))"
    )
    run = subprocess.run(
        ["docker", "run", "--rm", "-e", "SPARKENV_GATE=off", ref, "python3", "-c", probe],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    status = json.loads(run.stdout.strip().splitlines()[-1])
    assert status == {"installed": True, "active": True, "installed_by": "pth"}, status
    off = subprocess.run(
        [
            "docker",
            "run",
            "--rm",
            "-e",
            "SPARKENV_GATE=off",
            "-e",
            "SPARKENV_SDPA=0",
            ref,
            "python3",
            "-c",
            probe,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert json.loads(off.stdout.strip().splitlines()[-1])["active"] is False
