"""The house's layers, read from the code: an import only goes down, and no cycle joins two folders.

Layers, top to bottom (DESIGN.md, docs/architecture.md "Where things are"):
  6 CLI      cli/ (the typer app, the lean entry, the one place a command ends), __main__.py and every
             stage's commands.py (thin: options in, a stage called, the report handed to a renderer)
  5 stages   resolve/, lock/, image/, audit/, gate/, multinode/, patches/, render/, watch/, host/,
             gotchas.py
  4 rules    rules/: every judgement
  3 facts    facts/: the typed facts each stage gathers and the rules read (frozen, no I/O)
  2 readers  cuda/, environment/ (profiles included), knowledge/, index/: pure readers of files, ELF,
             data, and the package index
  1 core     core/ (report, outputs, safe reads, signals, the cache …), the package's
             __init__, and patches/sdpa.py: a standard-library-only payload that `patch sdpa --install`
             copies into a target, so any layer may read its one definition of the SDPA mode
Imports under TYPE_CHECKING and inside functions count: they are what a reader of the code follows.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

STAGES = {
    "resolve",
    "lock",
    "image",
    "audit",
    "gate",
    "multinode",
    "patches",
    "render",
    "watch",
    "host",
    "attest",
    "gotchas",
}
READERS = {"cuda", "environment", "knowledge", "index"}
PAYLOADS = {"sparkenv.patches.sdpa"}
NAMES = {6: "CLI", 5: "stage", 4: "rules", 3: "facts", 2: "reader", 1: "core"}


def layer(module: str) -> int:
    parts = module.split(".")
    if module in PAYLOADS or module == "sparkenv":
        return 1
    top = parts[1]
    if parts[-1] == "commands" or top in ("cli", "__main__"):
        return 6
    if top in STAGES:
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


def imports(root: Path) -> list[tuple[str, str, int]]:
    """(importer, imported module, line) for every import of a sparkenv module."""
    mods = modules(root)
    out = []
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
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
