"""Every data file of sparkenv/data is loaded once into frozen, validated records (sparkenv/knowledge/):
the shipped file loads and says exactly what its TOML says, names canonicalised; a hostile copy (wrong
type, missing or unknown key) is one clear error naming the file and the key; through the CLI, exit 2."""

from __future__ import annotations

import copy
import enum
import importlib
import re
import shutil
import subprocess
import sys
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from packaging.utils import canonicalize_name

from sparkenv import knowledge
from sparkenv.core import datafiles
from sparkenv.knowledge import KnowledgeError
from sparkenv.knowledge.schema import DistName, is_record

PACKAGE = Path(__file__).resolve().parents[2] / "sparkenv"
FILES = sorted(p.stem for p in (PACKAGE / "data").glob("*.toml"))
DELETE = object()


def _module(name: str) -> Any:
    return importlib.import_module(f"sparkenv.knowledge.records.{name}")


def _loader(name: str) -> Any:
    return getattr(knowledge, name)


def test_every_data_file_has_a_loader():
    records = {p.stem for p in (PACKAGE / "knowledge" / "records").glob("*.py")} - {"__init__"}
    assert sorted(records) == FILES == sorted(knowledge.FILES)
    assert all(_loader(name).__name__ == name for name in FILES)


def _same(tp: Any, loaded: Any, raw: Any, where: str) -> None:
    """`loaded` holds what `raw` (the TOML) says, as type `tp` reads it."""
    if is_record(tp):
        hints = typing.get_type_hints(tp)
        keys = set()
        for name in tp._fields:
            key = getattr(tp, "_toml_keys", {}).get(name, name)
            keys.add(key)
            value = getattr(loaded, name)
            if key in raw:
                _same(hints[name], value, raw[key], f"{where}.{key}")
            else:
                assert value == tp._field_defaults[name], where
        assert set(raw) <= keys, where
        return
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        (tp,) = (a for a in args if a is not type(None))
        origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is Mapping:
        assert isinstance(loaded, Mapping) and not isinstance(loaded, dict), where  # read-only
        assert [str(k) for k in loaded] == [str(k) for k in raw], where
        for (k, v), r in zip(loaded.items(), raw.values(), strict=True):
            _same(args[1], v, r, f"{where}.{k}")
    elif origin is tuple:
        assert isinstance(loaded, tuple) and len(loaded) == len(raw), where
        kinds = [args[0]] * len(raw) if args[-1] is Ellipsis else list(args)
        for i, (t, v, r) in enumerate(zip(kinds, loaded, raw, strict=True)):
            _same(t, v, r, f"{where}[{i}]")
    elif tp is DistName:
        assert loaded == canonicalize_name(raw), where
    elif isinstance(loaded, re.Pattern):
        assert loaded.pattern == raw, where
    elif isinstance(loaded, enum.Enum):
        assert loaded.value == raw, where
    else:
        assert loaded == raw and (type(loaded) is type(raw) or tp is float), where


@pytest.mark.parametrize("name", FILES)
def test_the_shipped_file_loads_once_and_says_what_its_toml_says(name):
    loaded = _loader(name)()
    assert _loader(name)() is loaded  # cached: read once per process
    tp = typing.get_type_hints(_module(name).parse)["return"]
    raw = datafiles.load(name)
    if name == "gotchas":  # the catalogue's review date sits beside G1 … G10 and is not one of them
        assert str(raw["reviewed"])
        raw = {k: v for k, v in raw.items() if k != "reviewed"}
    _same(tp, loaded, raw, name)
    if is_record(type(loaded)):
        with pytest.raises(AttributeError):
            setattr(loaded, loaded._fields[0], None)


def _hostile(name: str, path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    data = copy.deepcopy(datafiles.load(name))
    node = data
    for step in path[:-1]:
        node = node[step]
    if value is DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return data


HOSTILE = [
    (
        "gate",
        ("memory", "page_cache_warn_fraction"),
        "a quarter",
        "memory.page_cache_warn_fraction must be a number",
    ),
    ("gate", ("power", "busy_utilization"), True, "power.busy_utilization must be an integer, got True"),
    ("gate", ("gb10", "capability"), [12], "gb10.capability must be a list of 2"),
    ("gate", ("gb10", "name_contains"), DELETE, "gb10.name_contains is missing"),
    (
        "gate",
        ("memory", "page_cache_warn_fractoin"),
        0.3,
        "memory.page_cache_warn_fractoin is not a known key",
    ),
    ("servers", ("server", 0, "cap_args"), "--gpu-memory-utilization", "server[0].cap_args must be a list"),
    ("servers", ("server", 1, "name"), DELETE, "server[1].name is missing"),
    ("servers", ("server", 0, "default_fraction"), DELETE, "server[0].default_fraction is missing"),
    ("toolchain", ("ptxas", "min_release", "12.1"), 12.9, "ptxas.min_release.12.1 must be a string"),
    ("toolchain", ("triton", "default_env"), DELETE, "triton.default_env is missing"),
    ("hosts", ("issue", 0, "gotcha"), "G11", "issue[0].gotcha must be one of G1, G2"),
    ("hosts", ("issue", 0, "status"), "BAD", "issue[0].status must be one of PASS, FAIL"),
    ("hosts", ("issue", 0, "meminfo", "CmaTotal"), "0", "issue[0].meminfo.CmaTotal must be an integer"),
    ("hosts", ("issue", 0, "source"), DELETE, "issue[0].source is missing"),
    ("cuda", ("name", 0, "regex"), "(", "name[0].regex is not a valid regular expression"),
    ("cuda", ("soname", 0, "majors", "12"), "12", "soname[0].majors.12 must be an integer"),
    ("cuda", ("target_major",), DELETE, "target_major is missing"),
    ("cuda13_counterparts", ("family", 0, "source"), DELETE, "family[0].source is missing"),
    ("cuda13_counterparts", ("family", 0, "names"), "nvidia-cufft-cu12", "family[0].names must be a list"),
    (
        "cuda13_counterparts",
        ("family", 0, "counterpart"),
        "",
        "family[0] names neither a counterpart nor advice",
    ),
    ("drivers", ("toolkit", "13.0.2"), 580, "toolkit.13.0.2 must be a string"),
    ("drivers", ("forward_compat", "dirs"), DELETE, "forward_compat.dirs is missing"),
    ("kernels", ("runs_on", "sm", "a"), "sometimes", "runs_on.sm.a must be one of 'exact', 'same-major'"),
    ("kernels", ("limits", "max_seconds"), DELETE, "limits.max_seconds is missing"),
    ("multinode", ("spark", "twins"), ["rocep1s0f0"], "spark.twins[0] must be a list"),
    ("multinode", ("agreement", "fields"), DELETE, "agreement.fields is missing"),
    ("playbook_issues", ("issue", 0, "when"), [["bitsandbytes"]], "issue[0].when[0] must be a list of 2"),
    ("playbook_issues", ("issue", 0, "when", 0, 0), "", "issue[0].when[0][0] must be a distribution name"),
    ("playbook_issues", ("as_of",), DELETE, "as_of is missing"),
    ("gotchas", ("G4",), DELETE, "G4 is missing"),
    ("watch", ("memory", "eta_warn_s"), "soon", "memory.eta_warn_s must be a number"),
    ("watch", ("throttle", "source"), DELETE, "throttle.source is missing"),
    ("gotchas", ("G1", "title"), 1, "G1.title must be a string"),
    ("gotchas", ("G11",), {"title": "", "symptom": "", "cause": "", "fix": ""}, "must be one of G1, G2"),
    ("kernel_paths", ("family", 0, "pattern"), "(", "family[0].pattern is not a valid regular expression"),
    ("kernel_paths", ("cpu", "fail_share"), DELETE, "cpu.fail_share is missing"),
    ("packages", ("drift_prone",), "torch", "drift_prone must be a list"),
    ("packages", ("fallback_days",), DELETE, "fallback_days is missing"),
    # what the shipped file said before it was loaded this way: TOML put the key into the last table
    (
        "packages",
        ("cuda_capable", "jax", "fallback_days"),
        365,
        "cuda_capable.jax.fallback_days is not a known key",
    ),
]


@pytest.mark.parametrize(("name", "path", "value", "message"), HOSTILE, ids=lambda v: str(v)[:40])
def test_a_hostile_copy_is_one_clear_error_naming_file_and_key(name, path, value, message):
    with pytest.raises(KnowledgeError) as err:
        _module(name).parse(_hostile(name, path, value))
    text = str(err.value)
    assert text.startswith(f"sparkenv/data/{name}.toml: ") and message in text and "\n" not in text


def test_every_loader_has_hostile_cases():
    assert {name for name, *_ in HOSTILE} == set(FILES)


def test_distribution_names_are_canonical_at_load():
    gate = _module("gate").parse(
        _hostile("gate", ("nvfp4", "kernel_packages"), ["Flashinfer_Python", "Sgl.Kernel"])
    )
    assert gate.nvfp4.kernel_packages == ("flashinfer-python", "sgl-kernel")
    issues = _module("playbook_issues").parse(
        _hostile("playbook_issues", ("issue", 0, "when"), [["BitsAndBytes", "==0.49.1"]])
    )
    assert issues.issues[0].when == (("bitsandbytes", "==0.49.1"),)
    packages = _module("packages").parse(_hostile("packages", ("compiles_cuda",), {"Flash_Attn": []}))
    assert dict(packages.compiles_cuda) == {"flash-attn": ()}


def test_a_broken_shipped_file_ends_the_command_with_one_line_and_exit_2(tmp_path):
    """A real copy of the package with a mistyped gotchas.toml, run as a real process."""
    shutil.copytree(PACKAGE, tmp_path / "sparkenv", ignore=shutil.ignore_patterns("__pycache__"))
    toml = tmp_path / "sparkenv" / "data" / "gotchas.toml"
    toml.write_text(toml.read_text().replace('[G4]\ntitle = "', '[G4]\ntitle = 4\n# title = "', 1))
    proc = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            f"import sys; sys.path.insert(0, {str(tmp_path)!r}); "
            "from sparkenv.cli.entry import main; sys.argv = ['sparkenv', 'explain']; main()",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "sparkenv/data/gotchas.toml: G4.title must be a string, got 4" in lines[0]
    assert "Traceback" not in proc.stderr
