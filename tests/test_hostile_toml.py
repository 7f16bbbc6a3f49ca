"""Random TOML values thrown at the profile and pyproject loaders (issue 11, item 5): every input is
either loaded or refused with a SparkenvError (one line, exit 2) — never another exception, which the CLI
would turn into exit 70. The exact repros of the issue run through the real CLI as well."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sparkenv.core.datafiles import parse_toml
from sparkenv.core.errors import SparkenvError
from sparkenv.environment import profiles
from sparkenv.lock import inputs

REPO = Path(__file__).resolve().parents[1]
SHIPPED_PROFILE = REPO / "sparkenv" / "data" / "profiles" / "ngc-25.11.toml"


def toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v)  # a TOML basic string: JSON's escapes are TOML's
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(x)}" for k, x in v.items()) + "}"


def toml_doc(tables: dict[str, dict[str, Any]]) -> str:
    lines = []
    for table, keys in tables.items():
        if table:
            lines.append(f"[{table}]")
        lines += [f"{json.dumps(k)} = {toml_value(v)}" for k, v in keys.items()]
    return "\n".join(lines) + "\n"


scalars = st.one_of(
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(["linux/aarch64", "3.12.3", "torch", "", "../x", "ngc-25.11", "13.0"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
PROFILE_KEYS = list(parse_toml(SHIPPED_PROFILE.read_text()))


def loads_or_refuses(call) -> None:  # type: ignore[no-untyped-def]
    try:
        call()
    except SparkenvError as exc:
        assert str(exc) and "\n" not in str(exc)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(changes=st.dictionaries(st.sampled_from([*PROFILE_KEYS, "extra"]), values, min_size=1, max_size=4))
@example(changes={"name": "0", "provides": {"\n": ":"}})  # a key with a newline: the error stays one line
@example(changes={"name": "0", "provides": {"\n": False}})
def test_profile_loader_never_crashes(changes: dict[str, Any]):
    data = parse_toml(SHIPPED_PROFILE.read_text())
    top = {k: v for k, v in data.items() if not isinstance(v, dict)}
    tables = {k: v for k, v in data.items() if isinstance(v, dict)}
    for key, value in changes.items():
        tables.pop(key, None)
        top[key] = value
    text = toml_doc({"": top, **tables})
    loads_or_refuses(lambda: profiles._parse(text, "mine.toml"))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    project=st.dictionaries(
        st.sampled_from(["name", "dependencies", "optional-dependencies"]), values, max_size=3
    ),
    tool=st.dictionaries(
        st.sampled_from(["profile", "profile-file", "extras", "no-deps", "index-url", "extra-index-url"]),
        values,
        max_size=4,
    ),
    top=st.dictionaries(st.sampled_from(["project", "tool"]), scalars, max_size=1),
)
def test_pyproject_loader_never_crashes(tmp_path_factory, project, tool, top):  # type: ignore[no-untyped-def]
    folder = tmp_path_factory.mktemp("pp")
    doc = {"": top} if top else {"project": project, "tool.sparkenv": tool}
    (folder / "pyproject.toml").write_text(toml_doc(doc))
    loads_or_refuses(lambda: inputs.read([str(folder / "pyproject.toml")]))


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    return subprocess.run(
        [sys.executable, "-m", "sparkenv", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        env=env,
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ('platform = ["linux/aarch64"]', "mine.toml: platform must be a string, got an array"),
        ('provides = "torch"', "mine.toml: provides must be a table of strings, got a string"),
        ("python = 3.12", "mine.toml: python must be a string, got a float"),
        ('name = "../../../x"', "mine.toml: name '../../../x' may hold only a-z, 0-9"),
    ],
)
def test_profile_repros_are_exit_2_naming_file_and_key(tmp_path: Path, change: str, message: str):
    key = change.split(" = ")[0]
    data = parse_toml(SHIPPED_PROFILE.read_text())
    data.pop(key)
    top = {k: v for k, v in data.items() if not isinstance(v, dict)}
    tables = {k: v for k, v in data.items() if isinstance(v, dict)}
    (tmp_path / "mine.toml").write_text(change + "\n" + toml_doc({"": top, **tables}))
    (tmp_path / "requirements.txt").write_text("peft\n")
    proc = cli("check", "requirements.txt", "--profile", "mine.toml", cwd=tmp_path)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert "internal error" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('project = "x"\n', "pyproject.toml: project must be a table, got a string"),
        (
            '[project]\noptional-dependencies = "gpu"\n',
            "project.optional-dependencies must be a table of arrays of strings, got a string",
        ),
        (
            "[tool.sparkenv]\nno-deps = 5\n",
            "[tool.sparkenv] no-deps must be an array of strings, got an integer",
        ),
        ("a = " + "[" * 3000 + "]" * 3000 + "\n", "not valid TOML: arrays or tables nested too deeply"),
        (
            '[project]\ndependencies = ["peft", 7]\n',
            "project.dependencies[1] must be a string, got an integer",
        ),
    ],
)
def test_pyproject_repros_are_exit_2_naming_file_and_key(tmp_path: Path, text: str, message: str):
    (tmp_path / "pyproject.toml").write_text(text)
    proc = cli("check", "pyproject.toml", cwd=tmp_path)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert "internal error" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_timeout_nan_is_a_usage_error(tmp_path: Path):
    (tmp_path / "requirements.txt").write_text("peft\n")
    for bad in ("nan", "inf", "0", "-5"):
        proc = cli("lock", "requirements.txt", "--timeout", bad, cwd=tmp_path)
        assert proc.returncode == 2 and "--timeout: must be a finite number > 0" in proc.stderr, proc.stderr


def test_xdg_cache_home_that_is_a_file_is_one_line(tmp_path: Path):
    (tmp_path / "cache").write_text("not a folder")
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "SPARKENV_CACHE_DIR")}
    proc = subprocess.run(
        [sys.executable, "-m", "sparkenv", "build", "--dry-run", "--lock", "lockfiles/pylock.ngc-25-11.toml"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
        env={**env, "XDG_CACHE_HOME": str(tmp_path / "cache")},
    )
    assert proc.returncode == 2, proc.stderr
    assert f"{tmp_path}/cache is a file, not a folder" in proc.stderr and "$XDG_CACHE_HOME" in proc.stderr
