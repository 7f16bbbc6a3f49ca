"""The house's layers, read from the code: an import only goes down, no cycle joins two folders, and no
stage imports another stage's internals.

Layers, top to bottom (DESIGN.md, docs/architecture.md "Where things are"):
  7 CLI      cli/ (the typer app, the lean entry, the one place a command ends), __main__.py and every
             stage's commands.py (thin: options in, a stage called, the report handed to a renderer)
  6 stages   resolve/, image/, audit/, gate/, multinode/, patches/, watch/, host/, attest/: one stage
             imports of another only its public API, the folder's __init__ or its api.py
  5 shared   render/ (reports out), gotchas.py (the catalogue's text), lock/ (the lock file, uv driving
             and its caches: resolve locks, build locks through lock/api.py, audit reads locks)
  4 rules    rules/: every judgement
  3 facts    facts/: the typed facts each stage gathers and the rules read (frozen, no I/O)
  2 readers  cuda/, environment/ (profiles included), knowledge/, index/: pure readers of files, ELF,
             data, and the package index
  1 core     core/ (report, outputs, safe reads, signals, the cache …), the package's
             __init__, and patches/sdpa.py: a standard-library-only payload that `patch sdpa --install`
             copies into a target, so any layer may read its one definition of the SDPA mode
Imports under TYPE_CHECKING and inside functions count: they are what a reader of the code follows. So
does `importlib.import_module(NAME)` (and `__import__`) where NAME is spelt out: a string, a name looped
over or looked up in a literal tuple or dict, an f-string whose fixed start names the package; any other
argument is refused, its site named, unless COMPUTED lists it with its reason.
"""

from __future__ import annotations

import ast
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

STAGES = {"resolve", "image", "audit", "gate", "multinode", "patches", "watch", "host", "attest"}
SHARED = {"render", "gotchas", "lock"}
READERS = {"cuda", "environment", "knowledge", "index"}
PAYLOADS = {"sparkenv.patches.sdpa"}
NAMES = {7: "CLI", 6: "stage", 5: "shared", 4: "rules", 3: "facts", 2: "reader", 1: "core"}

# Computed imports kept, by `path:function`, each with why its name cannot be spelt out.
COMPUTED = {
    "sparkenv/gate/torch_probe.py:_sdpa_status": "runs in the workload's interpreter and imports the "
    "workload's SDPA hook module by the name the gate passes: not a module of this package",
    "sparkenv/rules/__init__.py:Lazy.__call__": "the rule function's module a `Lazy` names: a module of "
    "rules/ itself (the lazy façade: each stage imports only its own rule modules)",
    "sparkenv/gate/run.py:prepare_checks": "the module of each live rule (rule.check.__module__), imported "
    "in a check worker before the facts come: a module of rules/, below the gate",
}

# One stage's imports of another stage's internals that are still there, each with what would end it.
KNOWN_INTERNALS: dict[tuple[str, str], str] = {}


def layer(module: str) -> int:
    parts = module.split(".")
    if module in PAYLOADS or module == "sparkenv":
        return 1
    top = parts[1]
    if parts[-1] == "commands" or top in ("cli", "__main__"):
        return 7
    if top in STAGES:
        return 6
    if top in SHARED:
        return 5
    if top == "rules":
        return 4
    if top == "facts":
        return 3
    if top in READERS:
        return 2
    if top == "core":
        return 1
    raise AssertionError(f"{module} lies in no layer: place its folder in tests/test_layers.py")


def modules(root: Path) -> dict[str, Path]:
    found = {}
    for path in sorted((root / "sparkenv").rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _is_import_call(node: ast.AST) -> bool:
    """importlib.import_module(…), import_module(…) or __import__(…)."""
    if not isinstance(node, ast.Call) or not node.args:
        return False
    f = node.func
    if isinstance(f, ast.Name):
        return f.id in ("import_module", "__import__")
    return isinstance(f, ast.Attribute) and f.attr == "import_module"


def _strings(node: ast.AST | None) -> list[str] | None:
    """The strings of a literal tuple, list or set (a dict: its values); None for anything else."""
    if isinstance(node, ast.Dict):
        node = ast.Tuple(elts=list(node.values))
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts
    ):
        return [e.value for e in node.elts]  # type: ignore[attr-defined]
    return None


def _spelt(arg: ast.AST, constants: dict[str, list[str]], loops: dict[str, list[str]]) -> list[str] | None:
    """The module names an import call's argument can be, when the code spells them out; else None."""
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return [arg.value]
    if isinstance(arg, ast.Name):
        return loops.get(arg.id, constants.get(arg.id))
    if isinstance(arg, ast.Subscript) and isinstance(arg.value, ast.Name):
        return constants.get(arg.value.id)
    if isinstance(arg, ast.JoinedStr) and arg.values and isinstance(arg.values[0], ast.Constant):
        start = str(arg.values[0].value)
        if start.startswith("sparkenv.") and start.endswith("."):
            return [start[:-1]]  # the package is spelt out, the module in it is not
    return None


def _import_calls(tree: ast.Module) -> Iterator[tuple[ast.Call, list[str] | None, str]]:
    """Every import call: (call, the names it can import or None, `function` or `Class.method` it is in)."""
    constants: dict[str, list[str]] = {}
    for stmt in tree.body:  # NAME = ("sparkenv.a", …) at module level
        target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else None
        if isinstance(stmt, ast.AnnAssign):
            target = stmt.target
        found = _strings(getattr(stmt, "value", None))
        if isinstance(target, ast.Name) and found is not None:
            constants[target.id] = found
    loops: dict[str, list[str]] = {}
    for node in ast.walk(tree):  # for NAME in ("sparkenv.a", …) or in such a constant
        if isinstance(node, ast.For) and isinstance(node.target, ast.Name):
            it = node.iter
            found = constants.get(it.id) if isinstance(it, ast.Name) else _strings(it)
            if found is not None:
                loops[node.target.id] = found

    def walk(node: ast.AST, where: str) -> Iterator[tuple[ast.Call, list[str] | None, str]]:
        for child in ast.iter_child_nodes(node):
            inner = where  # a function inside a function: the outer one names the site
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if isinstance(node, ast.ClassDef):
                    inner = f"{where}.{child.name}"
                elif not where:
                    inner = child.name
            if _is_import_call(child):
                yield child, _spelt(child.args[0], constants, loops), where  # type: ignore[attr-defined]
            yield from walk(child, inner)

    yield from walk(tree, "")


def computed(root: Path) -> list[str]:
    """`path:function` of every import call whose module name is not spelt out."""
    found = []
    for path in modules(root).values():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for _call, names, where in _import_calls(tree):
            if names is None:
                found.append(f"{path.relative_to(root).as_posix()}:{where or '<module>'}")
    return sorted(set(found))


def imports(root: Path) -> list[tuple[str, str, int]]:
    """(importer, imported module, line) for every import of a sparkenv module."""
    mods = modules(root)
    out = []
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        called = {id(call): names or [] for call, names, _ in _import_calls(tree)}
        for node in ast.walk(tree):
            targets: list[str] = []
            if id(node) in called:
                targets = called[id(node)]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(up) + (f".{node.module}" if node.module else "")
                subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in mods]
                targets = subs if len(subs) == len(node.names) else [*subs, base]
            for t in targets:
                while t not in mods and "." in t:
                    t = t.rsplit(".", 1)[0]
                if t in mods and t != name and t.startswith("sparkenv"):
                    if t == "sparkenv":
                        continue  # the package's __init__ holds only __version__
                    out.append((name, t, node.lineno))
    return out


def upward(root: Path) -> list[str]:
    mods = modules(root)
    return [
        f"{mods[a].relative_to(root)}:{line} imports {b} ({NAMES[layer(a)]} -> {NAMES[layer(b)]})"
        for a, b, line in imports(root)
        if layer(b) > layer(a)
    ]


def internals(root: Path) -> list[tuple[str, str]]:
    """(importer, imported) where a stage imports a module of another stage that is not its public API:
    the folder's __init__ or its api.py."""
    return sorted(
        {
            (a, b)
            for a, b, _ in imports(root)
            if layer(a) == layer(b) == 6
            and folder(a) != folder(b)
            and b != f"sparkenv.{folder(b)}"
            and not b.endswith(".api")
        }
    )


def folder(module: str) -> str:
    parts = module.split(".")
    if module in PAYLOADS:  # copied alone into targets: a folder of its own
        return module
    if parts[-1] == "commands":  # a stage's commands.py is the CLI's, wherever it sits
        return "cli"
    return parts[1] if len(parts) >= 2 else "sparkenv"


def folder_cycles(root: Path) -> list[list[str]]:
    """Folders that import each other, through any modules: image -> resolve -> image is a cycle even when
    no single chain of modules closes it. Each as the sorted folders of one strongly connected set."""
    graph: dict[str, set[str]] = {}
    for a, b, _ in imports(root):
        if folder(a) != folder(b):
            graph.setdefault(folder(a), set()).add(folder(b))
    found = []
    for start in sorted(graph):
        reach, todo = set(), [start]
        while todo:
            for nxt in graph.get(todo.pop(), ()):
                if nxt not in reach:
                    reach.add(nxt)
                    todo.append(nxt)
        if start in reach:
            members = sorted(f for f in reach if start in _reaches(graph, f))
            if members not in found:
                found.append(members)
    return found


def _reaches(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def cycles(root: Path, within: bool = False) -> list[list[str]]:
    """Strongly connected sets of modules that span more than one folder (with `within`, any set of
    two modules or more, inside one folder too)."""
    graph: dict[str, set[str]] = {}
    for a, b, _ in imports(root):
        graph.setdefault(a, set()).add(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(v: str) -> None:  # Tarjan, iterative enough for a package this size
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len({folder(m) for m in scc}) > 1 or (within and len(scc) > 1):
                found.append(sorted(scc))

    for v in list(graph):
        if v not in index:
            visit(v)
    return found


def test_every_import_goes_down():
    assert upward(ROOT) == []


def test_every_import_call_spells_its_module():
    """A computed `import_module` is an edge the other tests cannot see: refused, unless COMPUTED says why."""
    assert computed(ROOT) == sorted(COMPUTED)


def test_no_stage_imports_another_stages_internals():
    """A stage calls another through its __init__ or api.py (build locks through lock/api.py; host reads
    the snapshot through environment/facts_file.py, not gate/): what is left is listed, with its reason."""
    assert set(internals(ROOT)) <= set(KNOWN_INTERNALS), sorted(set(internals(ROOT)) - set(KNOWN_INTERNALS))


def test_no_cycle_joins_two_folders():
    assert cycles(ROOT) == []


def test_no_two_folders_import_each_other():
    """Module cycles can miss it: gate -> watch.launch and watch.sampler -> gate.nvml closed no module
    cycle, yet the two folders depended on each other (NVML reading now lives in environment/)."""
    assert folder_cycles(ROOT) == []


def test_no_cycle_inside_a_folder_either():
    """render/emit ↔ render/options and the gate's early → entry → probes → early were cycles once: a
    module's imports can be read top to bottom, inside a folder too."""
    assert cycles(ROOT, within=True) == []


def test_the_sdpa_payload_imports_nothing_of_sparkenv():
    """It is copied alone into a target's site-packages; that is why it may sit at the bottom."""
    assert [b for a, b, _ in imports(ROOT) if a in PAYLOADS] == []


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "sparkenv", tmp_path / "sparkenv", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def test_a_planted_upward_import_is_named(tree: Path):
    rule = tree / "sparkenv" / "rules" / "g3.py"
    rule.write_text(rule.read_text() + "\nfrom sparkenv.gate import probes  # planted\n")
    found = upward(tree)
    assert len(found) == 1
    assert found[0].startswith("sparkenv/rules/g3.py:")
    assert "imports sparkenv.gate.probes (rules -> stage)" in found[0]


def test_a_planted_cycle_between_folders_is_found(tree: Path):
    core = tree / "sparkenv" / "core"
    (core / "report.py").write_text(
        (core / "report.py").read_text() + "\nfrom sparkenv.core import outputs  # planted\n"
    )
    (core / "outputs.py").write_text(
        (core / "outputs.py").read_text() + "\nfrom sparkenv.cuda import elf  # planted\n"
    )
    elf = tree / "sparkenv" / "cuda" / "elf.py"
    elf.write_text(elf.read_text() + "\nfrom sparkenv.core import report  # planted\n")
    found = cycles(tree)
    assert any({"sparkenv.core.report", "sparkenv.cuda.elf"} <= set(c) for c in found), found


def test_a_planted_folder_cycle_without_a_module_cycle_is_found(tree: Path):
    """watch/sampler.py reading NVML from gate/ again, as it once did: no module cycle, a folder cycle."""
    sampler = tree / "sparkenv" / "watch" / "sampler.py"
    sampler.write_text(sampler.read_text() + "\nfrom sparkenv.gate import probes  # planted\n")
    assert cycles(tree) == []
    assert ["gate", "watch"] in folder_cycles(tree)


def test_a_planted_cycle_inside_a_folder_is_found(tree: Path):
    """render/options importing render/emit again (as it once did) is named; between folders it is not."""
    options = tree / "sparkenv" / "render" / "options.py"
    options.write_text(options.read_text() + "\nfrom sparkenv.render import emit  # planted\n")
    assert cycles(tree) == []
    assert cycles(tree, within=True) == [["sparkenv.render.emit", "sparkenv.render.options"]]


def _plant(tree: Path, rel: str, text: str) -> None:
    path = tree / "sparkenv" / rel
    path.write_text(path.read_text() + "\n" + text + "\n")


@pytest.mark.parametrize(
    "call",
    [
        'importlib.import_module("sparkenv.gate.probes")',
        '__import__("sparkenv.gate.probes")',
        'import_module(NAMES["probes"])\nNAMES = {"probes": "sparkenv.gate.probes"}',
        'for name in ("sparkenv.gate.probes",):\n    importlib.import_module(name)',
    ],
    ids=["import_module", "__import__", "a literal dict", "a literal loop"],
)
def test_a_planted_spelt_out_import_call_is_an_edge(tree: Path, call: str):
    """rules/ importing the gate by name: an upward import like any other."""
    _plant(tree, "rules/g3.py", "import importlib\nfrom importlib import import_module\n" + call)
    found = upward(tree)
    assert len(found) == 1 and found[0].startswith("sparkenv/rules/g3.py:"), found
    assert "imports sparkenv.gate.probes (rules -> stage)" in found[0]


def test_a_planted_computed_import_is_refused_with_its_site(tree: Path):
    _plant(
        tree,
        "audit/scan.py",
        "def load(name):\n    import importlib\n\n    return importlib.import_module(name)",
    )
    _plant(tree, "rules/g3.py", "class Late:\n    def get(self, n):\n        return __import__(n + 'x')")
    assert set(computed(tree)) - set(COMPUTED) == {
        "sparkenv/audit/scan.py:load",
        "sparkenv/rules/g3.py:Late.get",
    }


def test_a_planted_import_of_another_stages_internals_is_named(tree: Path):
    """audit reaching into the gate's probes is named; the same stage through an api.py, or a package's
    __init__, is not."""
    _plant(tree, "audit/scan.py", "from sparkenv.gate import probes  # planted")
    assert ("sparkenv.audit.scan", "sparkenv.gate.probes") in internals(tree)
    (tree / "sparkenv" / "gate" / "api.py").write_text("from sparkenv.gate.probes import gather\n")
    _plant(tree, "host/run.py", "from sparkenv.gate import api\nfrom sparkenv import multinode")
    assert [(a, b) for a, b in internals(tree) if a == "sparkenv.host.run"] == []
