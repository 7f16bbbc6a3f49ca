"""Each concept has one definition: a check over the source tree (what `grep` would find, read as Python
syntax so prose in docstrings and messages does not count) that names every second copy. Each guard is
shown to fail on a copy planted in a temporary tree."""

from __future__ import annotations

import ast
import functools
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _call(node: ast.AST, module: str, names: set[str]) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == module
        and node.func.attr in names
    )


def _text(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _atomic_write(node: ast.AST) -> bool:
    return _call(node, "os", {"replace", "rename"}) or _call(
        node, "tempfile", {"mkstemp", "NamedTemporaryFile"}
    )


def _cache_variable(node: ast.AST) -> bool:
    return _text(node) == "SPARKENV_CACHE_DIR"  # (index/uv_cache.py's XDG_CACHE_HOME is uv's folder)


def _sdpa_off_words(node: ast.AST) -> bool:
    return _text(node) in ("disable", "disabled")


def _ngc_constraint_file(node: ast.AST) -> bool:
    return (_text(node) or "").lstrip("/") == "etc/pip/constraint.txt"


def _ngc_variable(node: ast.AST) -> bool:
    return _text(node) == "NVIDIA_PYTORCH_VERSION"


def _label_decoding(node: ast.AST) -> bool:
    text = _text(node) or ""
    return any(p in text for p in (r"cu\d", r"cu(\d", r"cu[0-9]", r"cpu(?:", "|cpu)"))


def _marker_environment(node: ast.AST) -> bool:
    if isinstance(node, ast.Dict):
        keys = {_text(k) for k in node.keys if k is not None}
        return {"platform_machine", "python_full_version"} <= keys
    return isinstance(node, ast.Name | ast.Attribute) and getattr(
        node, "id", getattr(node, "attr", None)
    ) == ("default_environment")


def _exact_pin(node: ast.AST) -> bool:
    return _text(node) in ("==", "===")


def _unsloth_family(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "unsloth_family"


def _container_marker(node: ast.AST) -> bool:
    return (_text(node) or "").lstrip("/") in (".dockerenv", "run/.containerenv")


def _pylock_reading(node: ast.AST) -> bool:
    return isinstance(node, ast.ImportFrom) and node.module == "packaging.pylock"


def _toml_loader(node: ast.AST) -> bool:
    return isinstance(node, ast.Import | ast.ImportFrom) and any(
        (getattr(node, "module", None) or a.name) in ("tomllib", "tomli") for a in node.names
    )


def _gotcha_pattern(node: ast.AST) -> bool:
    text = _text(node) or ""
    return any(p in text for p in ("10|[1-9]", "[1-9]|10", r"[gG]?(\d+)", "G(10|", "G(?:10"))


def _driver_file(node: ast.AST) -> bool:
    return _text(node) in ("/proc/driver/nvidia/version", "/sys/module/nvidia/version")


def _gpu_option(node: ast.AST) -> bool:
    """A call of parse_capability: what --gpu accepts is coverage.parse_gpu_option's to decide."""
    func = node.func if isinstance(node, ast.Call) else None
    return getattr(func, "id", getattr(func, "attr", None)) == "parse_capability"


def _wrong_cpu(node: ast.AST) -> bool:
    """`so.info.machine != machine`: which shared objects are of another CPU."""
    return (
        isinstance(node, ast.Compare)
        and any(isinstance(op, ast.NotEq) for op in node.ops)
        and any(
            isinstance(s, ast.Attribute) and s.attr == "machine" and getattr(s.value, "attr", None) == "info"
            for s in (node.left, *node.comparators)
        )
    )


def _marker_evaluation(node: ast.AST) -> bool:
    """`req.marker.evaluate(env)`, `Marker(text).evaluate(env)`: a requirement marker evaluated."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    return node.func.attr == "evaluate" and "marker" in ast.unparse(node.func.value).lower()


def _signal_handler(node: ast.AST) -> bool:
    return _call(node, "signal", {"signal"})


def _terminated_class(node: ast.AST) -> bool:
    return isinstance(node, ast.ClassDef) and node.name == "Terminated"


def _child_process(node: ast.AST) -> bool:
    """A child started outside the registry: subprocess's starters, a session of its own, or a fork."""
    own_session = isinstance(node, ast.keyword) and node.arg in ("start_new_session", "process_group")
    return (
        own_session
        or _call(node, "subprocess", {"Popen", "run", "call", "check_call", "check_output"})
        or _call(node, "os", {"fork", "forkpty"})
    )


def _worker_pool(node: ast.AST) -> bool:
    """A forked worker answering through a pipe: children.fork, or a pipe of one's own to frame on."""
    return _call(node, "children", {"fork"}) or _call(node, "os", {"pipe", "pipe2"})


def _one_shot_container(node: ast.AST) -> bool:
    f = getattr(node, "func", None) if isinstance(node, ast.Call) else None
    return (
        isinstance(f, ast.Attribute)
        and f.attr in ("create", "run")
        and isinstance(f.value, ast.Attribute)
        and f.value.attr == "containers"
    )


def _include_parsing(node: ast.AST) -> bool:
    """Finding `-r`/`-c` includes: by pip-requirements-parser's line reading (its preprocess and option
    parser), or by a pattern of one's own naming the options."""
    if isinstance(node, ast.ImportFrom) and node.module == "pip_requirements_parser":
        return any(a.name in ("preprocess", "get_line_parser", "break_args_options") for a in node.names)
    text = _text(node) or ""
    return any(p in text for p in ("--requirement", "--constraint", "-r|-c", "-c|-r"))


def _engine_error(node: ast.AST) -> bool:
    """Catching the Docker engine's errors (docker.errors' API, connection and general ones) outside the
    one translation, engine.talking: each such catch became its own message and exit code."""
    return (
        isinstance(node, ast.ImportFrom)
        and node.module == "docker.errors"
        and any(a.name in ("APIError", "DockerException") for a in node.names)
    )


def _cuda13_index(node: ast.AST) -> bool:
    """The PyTorch CUDA 13 index's address: data/packages.toml's cuda13_index, read, never written."""
    from sparkenv.knowledge import packages

    return packages().cuda13_index.rstrip("/") in (_text(node) or "")


def _gb10_capability(node: ast.AST) -> bool:
    """The GB10's capability written as a default: data/gate.toml's [gb10] capability, read."""
    return _text(node) == "12.1"


def _own_command_line(node: ast.AST) -> bool:
    """`arg == "--"`: a loop reading sparkenv's own command line by hand, beside typer and fastargs (the
    gate had one of its own once; launchers' command lines are environment/parsers.py's, read otherwise)."""
    return isinstance(node, ast.Compare) and any(_text(c) == "--" for c in (node.left, *node.comparators))


def _index() -> str:
    from sparkenv.knowledge import packages

    return packages().cuda13_index


@dataclass(frozen=True)
class Guard:
    concept: str
    owners: tuple[str, ...]  # files (or folders, ending in /) under sparkenv/ allowed to hold it
    finds: Callable[[ast.AST], bool]
    plant: str  # a second copy, as someone might write it

    def offenders(self, root: Path) -> list[str]:
        """`path:line` of every match outside the owners, under root/sparkenv; the literal text of an
        f-string (a message such as f"pin {key}=={version}") is prose, not a definition."""
        found = []
        for rel, tree in _trees(root):
            if rel in self.owners or any(o.endswith("/") and rel.startswith(o) for o in self.owners):
                continue
            text = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
            found += [
                f"sparkenv/{rel}:{n.lineno}" for n in ast.walk(tree) if id(n) not in text and self.finds(n)
            ]
        return found


@functools.cache
def _trees(root: Path) -> tuple[tuple[str, ast.AST], ...]:
    """Every module under root/sparkenv, parsed once for all the guards."""
    pkg = root / "sparkenv"
    return tuple(
        (p.relative_to(pkg).as_posix(), ast.parse(p.read_text(encoding="utf-8"), str(p)))
        for p in sorted(pkg.rglob("*.py"))
    )


GUARDS = [
    Guard("atomic file writes", ("core/outputs.py",), _atomic_write, "import os\nos.replace('a.tmp', 'a')\n"),
    Guard(
        "the cache folder ($SPARKENV_CACHE_DIR)",
        ("core/cache.py",),
        _cache_variable,
        "import os\nfolder = os.environ.get('SPARKENV_CACHE_DIR')\n",
    ),
    Guard(
        "the SDPA off words of $SPARKENV_SDPA",
        ("patches/sdpa.py",),
        _sdpa_off_words,
        "OFF = ('0', 'off', 'disable')\n",
    ),
    Guard(
        "inside NGC: the constraint file",
        ("facts/ngc.py",),
        _ngc_constraint_file,
        "inside = open('/etc/pip/constraint.txt').read()\n",
    ),
    # gate/probes.py lists the variables its snapshot records; it reads them, facts/ngc.py holds them
    Guard(
        "inside NGC: $NVIDIA_PYTORCH_VERSION",
        ("facts/ngc.py", "gate/probes.py"),
        _ngc_variable,
        "import os\ninside = 'NVIDIA_PYTORCH_VERSION' in os.environ\n",
    ),
    Guard(
        "the CUDA major of a +cu/+cpu label",
        ("cuda/rules.py", "rules/cuda_major.py"),
        _label_decoding,
        "import re\nLABEL = re.compile(r'\\+cu(\\d+)')\n",
    ),
    Guard(
        "the marker environment of a target",
        ("environment/markers.py",),
        _marker_environment,
        "ENV = {'platform_machine': 'aarch64', 'python_full_version': '3.12.3'}\n",
    ),
    # cuda/rules.py's pinned_major reads the major a versioned CUDA wheel's specifier names (==13.*, ~=13.0
    # as well) through pins.pinned_clause: the one reader of a specifier's pinning clauses
    Guard(
        "exact-pin extraction",
        ("core/pins.py",),
        _exact_pin,
        "def pin(spec):\n    return spec.version if spec.operator == '==' else None\n",
    ),
    Guard(
        "the Unsloth family",
        ("rules/unsloth.py", "knowledge/"),
        _unsloth_family,
        "from sparkenv.knowledge import packages\nFAMILY = packages().unsloth_family\n",
    ),
    Guard(
        "inside a container",
        ("environment/container.py",),
        _container_marker,
        "import os\ninside = os.path.exists('/.dockerenv')\n",
    ),
    Guard("TOML loading (tomli, else tomllib)", ("core/datafiles.py",), _toml_loader, "import tomllib\n"),
    Guard("lock reading (pylock)", ("lock/",), _pylock_reading, "from packaging.pylock import Pylock\n"),
    Guard(
        "the G-number pattern",
        ("core/report.py",),
        _gotcha_pattern,
        "import re\nID = re.compile(r'G(10|[1-9])')\n",
    ),
    Guard(
        "the host driver's version, read",
        ("environment/host_driver.py",),
        _driver_file,
        "text = open('/proc/driver/nvidia/version').read()\n",
    ),
    Guard(
        "what --gpu accepts",
        ("cuda/coverage.py",),
        _gpu_option,
        "from sparkenv.cuda.coverage import parse_capability\ncap = parse_capability('12.1')\n",
    ),
    Guard(
        "a shared object of another CPU",
        ("rules/wrong_cpu.py",),
        _wrong_cpu,
        "def bad(df, machine):\n    return [so for so in df.shared_objects if so.info.machine != machine]\n",
    ),
    Guard(
        "a requirement marker evaluated",
        ("environment/markers.py",),
        _marker_evaluation,
        "def applies(req, env):\n    return req.marker is None or req.marker.evaluate(env)\n",
    ),
    Guard(
        # watch/supervise.py: gate --watch's supervisor forwards every signal to the workload, a PID 1's
        # duty, not sparkenv's own cleanup (core/signals.py)
        "signal handlers",
        ("core/signals.py", "watch/supervise.py"),
        _signal_handler,
        "import signal\nsignal.signal(15, print)\n",
    ),
    Guard(
        "the Terminated signal exception",
        ("core/signals.py",),
        _terminated_class,
        "class Terminated(Exception): ...\n",
    ),
    Guard(
        "the child-process registry (own session, killed with its group)",
        # forks too: children.fork (core/pool.py's workers: the audit's readers, the gate's probes);
        # watch/supervise.py starts the user's workload, which must outlive no registry and die with no group
        ("core/children.py", "watch/supervise.py"),
        _child_process,
        "import subprocess\nproc = subprocess.run(['uv', 'pip', 'compile'], timeout=60)\n",
    ),
    Guard(
        "the worker pool (forked workers, their pipes and framing)",
        ("core/pool.py", "core/children.py", "watch/supervise.py"),  # the supervisor's self-pipe wake-up
        _worker_pool,
        "import os\nanswers, to_parent = os.pipe()\n",
    ),
    Guard(
        "one-shot containers",
        ("image/engine.py",),
        _one_shot_container,
        "def probe(client):\n    return client.containers.run('img', 'python3 -V', remove=True)\n",
    ),
    Guard(
        "Docker engine errors (exit 3 with the engine's message)",
        ("image/engine.py",),
        _engine_error,
        "def tag(client, ref):\n    from docker.errors import APIError\n",
    ),
    Guard(
        "-r/-c include parsing",
        ("lock/includes.py",),
        _include_parsing,
        "import re\nINCLUDE = re.compile(r'^(?:-r|-c|--requirement|--constraint)\\s+(\\S+)')\n",
    ),
    Guard(
        "sparkenv's command line read without typer",
        ("core/fastargs.py",),
        _own_command_line,
        "def parse(argv):\n    return argv[argv.index('--') + 1 :] if argv[0] == '--' else argv\n",
    ),
    Guard(
        "the PyTorch CUDA 13 index (data/packages.toml cuda13_index)",
        (),
        _cuda13_index,
        f"FIX = 'install it from {_index()}'\n",
    ),
    # image/engine.py's verify() keeps a "12.1" default of its own (base21 edits image/ this session)
    Guard(
        "the GB10's capability (data/gate.toml [gb10])",
        ("image/engine.py",),
        _gb10_capability,
        "def audit(gpu: str = '12.1'): ...\n",
    ),
]


@pytest.mark.parametrize("guard", [pytest.param(g, id=g.concept) for g in GUARDS])
def test_one_definition(guard):
    assert guard.offenders(ROOT) == [], f"{guard.concept} has a second definition"


@pytest.mark.parametrize("guard", [pytest.param(g, id=g.concept) for g in GUARDS])
def test_a_planted_copy_is_found(guard, tmp_path):
    """A copy of the owners' files, plus one planted module: the guard names exactly the planted line."""
    pkg = tmp_path / "sparkenv"
    pkg.mkdir()
    for owner in guard.owners:
        src = ROOT / "sparkenv" / owner
        if src.is_dir():
            shutil.copytree(src, pkg / owner)
        elif src.exists():
            (pkg / owner).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, pkg / owner)
    (pkg / "planted.py").write_text(guard.plant)
    last_line = len(guard.plant.rstrip("\n").split("\n"))  # each plant's copy is on its last line
    assert guard.offenders(tmp_path) == [f"sparkenv/planted.py:{last_line}"]


@pytest.mark.parametrize("guard", [pytest.param(g, id=g.concept) for g in GUARDS])
def test_every_owner_exists(guard):
    """A guard naming a module that moved guards nothing: each owner is a file or folder of sparkenv/."""
    assert [o for o in guard.owners if not (ROOT / "sparkenv" / o).exists()] == []


def test_the_schema_accepts_exactly_the_g_numbers_the_code_knows():
    """report.schema.json keeps its own "id" pattern (a published contract): it accepts exactly what
    report.GOTCHA_PATTERN, the code's one pattern, accepts."""
    import json
    import re

    from sparkenv.core.report import GOTCHA_PATTERN, GotchaId

    schema = json.loads((ROOT / "sparkenv" / "data" / "report.schema.json").read_text())
    ids = schema["properties"]["findings"]["items"]["properties"]["id"]["pattern"]
    tried = [f"G{n}" for n in range(0, 130)] + ["g1", "G01", "G1 ", "", "G", "GG1", "G10a"]
    schema_says = [t for t in tried if re.search(ids, t)]
    assert schema_says == [t for t in tried if re.fullmatch(GOTCHA_PATTERN, t)]
    assert schema_says == [g.value for g in GotchaId]


def test_the_gate_options_have_one_set_of_defaults():
    """gate/options.py declares the gate's options (help, type, default) for both of its parsers: the typer
    command has exactly those, with those defaults, and GateArgs has one field per option, no defaults."""
    import dataclasses

    import typer.main

    from sparkenv.cli.commands import app
    from sparkenv.gate.entry import GateArgs
    from sparkenv.gate.options import GATE

    command = next(c for c in typer.main.get_command(app).commands.values() if c.name == "gate")
    typer_defaults = {p.name: p.default for p in command.params}
    assert {o.name: typer_defaults.get(o.name, "missing") for o in GATE} == {o.name: o.default for o in GATE}
    fields = dataclasses.fields(GateArgs)
    assert [f.name for f in fields if f.name not in ("workload", "reporting")] == [o.name for o in GATE]
    assert all(f.default is dataclasses.MISSING for f in fields)


def test_the_data_files_name_one_cuda13_index():
    """Every PyTorch CUDA index address in sparkenv/data (fix texts of gotchas.toml, packages.toml) is
    packages.toml's cuda13_index: a new index is one edit there, and a second spelling fails here."""
    import re

    from sparkenv.knowledge import packages

    index = packages().cuda13_index
    mentions = {
        (p.name, m)
        for p in (ROOT / "sparkenv" / "data").glob("*.toml")
        for m in re.findall(r"https?://[^\s\"')]+/whl/(?:cu|cpu)\w*", p.read_text(encoding="utf-8"))
    }
    assert mentions and {m for _, m in mentions} == {index}, sorted(mentions)
