"""What a project declares: requirements files (pip syntax, with includes) and pyproject.toml.

Requirements files are read by pip-requirements-parser (`-r`/`-c` includes, index options, hashes,
markers, URLs, editables); pyproject.toml by tomllib. Nothing here evaluates markers for the host: the
policy evaluates them against the profile's marker environment.

A requirements file that ends up installed with `pip install --no-deps` says so with a comment line
`# sparkenv: no-deps` (the hashed files `sparkenv lock` writes carry it); in pyproject.toml,
`[tool.sparkenv] no-deps = ["unsloth", …]` names the distributions installed in a `--no-deps` stage.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from sparkenv.core import project, safe_read, schema
from sparkenv.core.errors import SparkenvError
from sparkenv.core.redact import excerpt
from sparkenv.environment import profiles
from sparkenv.facts.declared import Declared

# [tool.sparkenv] keys sparkenv reads, and their types (an unknown key is a warning: `unknown_keys`)
_SETTINGS = {
    "profile": schema.STRING,
    "profile-file": schema.STRING,
    "extras": schema.STRINGS,
    "groups": schema.STRINGS,
    "no-deps": schema.STRINGS,
    "index-url": schema.STRING,
    "extra-index-url": schema.STRINGS,
    "allow-outside": schema.STRINGS,  # folders outside the project an include may name (core.confine)
}
NO_DEPS_DIRECTIVE = re.compile(r"^\s*#\s*sparkenv:\s*no-deps\s*$", re.MULTILINE)


@dataclass
class Inputs:
    paths: list[str]  # as given on the command line
    requirements: list[Declared] = field(default_factory=list)
    index_url: str | None = None
    extra_index_urls: list[str] = field(default_factory=list)
    find_links: list[str] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)  # every file read, includes too
    settings: dict[str, Any] = field(default_factory=dict)  # [tool.sparkenv]
    stdin: dict[Path, str] = field(default_factory=dict)  # `-`: the text read, at the name it goes by

    def digest(self) -> str:
        """sha256 over every file read (line endings normalized), in a stable order."""
        import hashlib  # only lock and lock --check hash the inputs; check does not

        h = hashlib.sha256()
        for path in sorted({p.resolve() for p in self.files}, key=str):
            h.update(path.name.encode() + b"\0")
            piped = self.stdin.get(path)
            data = (
                piped.encode()
                if piped is not None
                else safe_read.read_bytes(path, what="an input file", limit=16 << 20)
            )
            h.update(data.replace(b"\r\n", b"\n") + b"\0")
        return "sha256:" + h.hexdigest()

    def requirements_digest(self) -> str:
        """sha256 of what the inputs ask for, parsed: each requirement's name, specifier, marker, extras,
        URL and stage, the index options and [tool.sparkenv]. A comment, a blank line, spacing, the order
        of lines or a name's spelling (Torch_Vision, torchvision) changes nothing, as uv compares
        requirements, not bytes (`lock --check` judges staleness by it). Local paths are recorded relative
        to the first input's folder, so a lock checked out elsewhere stays current."""
        import hashlib
        import json

        base = self.files[0].parent if self.files else Path.cwd()

        def place(value: str) -> str:
            path = Path(value.removeprefix("file://"))
            if path.is_absolute():
                try:
                    return path.relative_to(base).as_posix()
                except ValueError:
                    return value
            return value

        entries = sorted(
            json.dumps(
                [
                    d.key or place(d.text),
                    str(d.specifier),
                    str(d.marker) if d.marker else "",
                    sorted(d.extras),
                    place(d.url) if d.url else "",
                    d.editable,
                    d.constraint,
                    d.no_deps,
                ]
            )
            for d in self.requirements
        )
        options = {
            "index-url": self.index_url or "",
            "extra-index-urls": list(self.extra_index_urls),
            "find-links": [place(f) for f in self.find_links],
            "settings": self.settings,
        }
        text = json.dumps({"requirements": entries, **options}, sort_keys=True, default=str)
        return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def read(
    paths: list[str],
    extras: list[str] | None = None,
    fence: Path | None = None,
    groups: list[str] | None = None,
) -> Inputs:
    """The declared requirements of `paths`. `fence`: inputs named by a lock, whose `-r`/`-c` includes
    must stay inside that project folder (sparkenv.core.confine). `groups`: PEP 735 dependency groups of a
    pyproject.toml to read too."""
    if not paths:
        raise SparkenvError("no input given: name a requirements file or a pyproject.toml")
    inputs = Inputs(list(paths))
    for arg in paths:
        path = Path(arg)
        if arg == safe_read.STDIN_ARG:
            _stdin(inputs, fence)
        elif path.name == "pyproject.toml" or path.suffix == ".toml":
            _pyproject(path, arg, inputs, extras or [], groups or [])
        else:
            _requirements(path, arg, inputs, fence)
    return inputs


def _where(filename: str, line: int | None) -> str:
    return f"{filename}:{line}" if line else filename


# A line pip reads as nothing but a named requirement (name, extras, specifiers, marker): no option, no
# include, no URL or path, no ${VAR}, no continuation. pip's comment rule: "#" at the start or after
# whitespace ends the line.
_PLAIN_LINE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\s*(\[[^\]]*\])?[^@$\\/:]*")
_COMMENT = re.compile(r"(^|\s+)#.*$")
_ARCHIVE = re.compile(r"\.(whl|zip|tar|tgz|tbz|txz|tlz)\b")  # pip reads such a name as a local file


def plain_requirements(text: str) -> list[tuple[int, Requirement]] | None:
    """The requirements of a file whose every line is a plain named requirement (or blank, or a
    comment), with their line numbers; None when any line needs pip's full grammar (options, includes,
    URLs, paths, environment variables, continuations, an invalid line), which pip-requirements-parser
    reads then. Most requirements files are plain; this spares `check` the parser's import and its
    per-line option parser. tests/lock/test_inputs_plain.py holds the two readers to the same result."""
    found = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        if raw.endswith("\\"):
            return None  # pip joins it with the next line, even after a comment
        line = _COMMENT.sub("", raw).strip()
        if not line:
            continue
        if not _PLAIN_LINE.fullmatch(line) or _ARCHIVE.search(line) or " -" in line or "\t-" in line:
            return None
        try:
            found.append((lineno, Requirement(line)))
        except InvalidRequirement:
            return None  # the parser words the error
    return found


def _stdin(inputs: Inputs, fence: Path | None) -> None:
    """`-`: a requirements file piped in, read once and bounded, named "<stdin>" in every message. It
    stands in the current folder: its includes are relative to it and fenced by its project
    (core.confine.project_root), as a file typed there would be."""
    from sparkenv.lock.includes import REQUIREMENTS_LIMIT

    if inputs.stdin:
        raise SparkenvError("- (standard input) is given twice: it can be read once")
    text = safe_read.read_stdin(what="a requirements file", limit=REQUIREMENTS_LIMIT)
    path = Path(safe_read.STDIN)  # relative: the parser joins includes to it, messages show them so
    inputs.stdin[path.resolve()] = text.removeprefix("\ufeff")  # a BOM, as pip drops it from a file
    _requirements(path, safe_read.STDIN, inputs, fence, inputs.stdin[path.resolve()])


def _requirements(
    path: Path, arg: str, inputs: Inputs, fence: Path | None = None, text: str | None = None
) -> None:
    from sparkenv.lock.includes import prescan

    # FIFOs, devices, huge or undecodable files, missing or fenced includes: one line, before the parser
    texts = prescan(path, arg, fence, text)
    if len(texts) == 1:
        ((resolved, text),) = texts.items()
        plain = plain_requirements(text)
        if plain is not None:
            inputs.files.append(resolved)
            no_deps = bool(NO_DEPS_DIRECTIVE.search(text))
            for lineno, r in plain:
                _add(inputs, r, _where(arg, lineno), path.parent, no_deps, constraint=False)
            return
    parsed_requirements(path, arg, inputs, texts)


@contextlib.contextmanager
def _piped(stdin: dict[Path, str]) -> Iterator[None]:
    """The parser opens every file itself (its module-level get_file_content); standard input is no file,
    so its text is handed over under its name. Only for that name: every other file is opened as before.
    inputs are read on one thread, so the swap is seen by this parse alone."""
    import pip_requirements_parser as parser

    if not stdin:
        yield
        return
    original = parser.get_file_content

    def content(filename: str) -> str:
        piped = stdin.get(Path(filename).resolve())
        return piped if piped is not None else original(filename)

    parser.get_file_content = content
    try:
        yield
    finally:
        parser.get_file_content = original


def parsed_requirements(path: Path, arg: str, inputs: Inputs, texts: dict[Path, str]) -> None:
    """pip's whole grammar, by pip-requirements-parser (`texts`: every file it will open, prescanned)."""
    from pip_requirements_parser import InstallationError, RequirementsFile

    try:
        with _piped(inputs.stdin):
            parsed = RequirementsFile.from_file(str(path), include_nested=True)
    except (InstallationError, OSError) as exc:  # a file swapped or removed since the prescan read it
        raise SparkenvError(f"{arg}: {str(exc).split('|n')[0]}") from None
    if parsed.invalid_lines:
        bad = parsed.invalid_lines[0]
        first = bad.error_message.splitlines()[0] if bad.error_message else "invalid line"
        # a stranger's line: quoted bounded and redacted, never whole
        raise SparkenvError(
            f"{_shown(bad.filename, path, arg)}:{bad.line_number}: {excerpt(first)}: {excerpt(bad.line)}"
        )
    files = _options(parsed, path, arg, inputs)
    no_deps_files = {f for f in files if NO_DEPS_DIRECTIVE.search(texts.get(f, ""))}
    inputs.files.extend(sorted(files))
    for req in parsed.requirements:
        _parsed_requirement(req, path, arg, inputs, no_deps_files)


def _options(parsed: Any, path: Path, arg: str, inputs: Inputs) -> set[Path]:
    """The files' option lines (indexes, find-links) into `inputs`; every file read, includes too."""
    files = {path.resolve()}
    for opt in parsed.options:
        where = _where(_shown(opt.requirement_line.filename, path, arg), opt.requirement_line.line_number)
        base = Path(opt.requirement_line.filename).parent
        for name, value in opt.options.items():
            if name == "index_url":
                inputs.index_url = value
            elif name == "extra_index_urls":
                inputs.extra_index_urls.extend(v for v in value if v not in inputs.extra_index_urls)
            elif name == "find_links":
                inputs.find_links.extend(_local(v, base) for v in value)
            elif name in ("requirements", "constraints"):
                files.update((base / v).resolve() for v in value)
            elif name in ("no_index",):
                raise SparkenvError(f"{where}: --no-index is not supported; give --find-links or an index")
    return files


def _parsed_requirement(req: Any, path: Path, arg: str, inputs: Inputs, no_deps_files: set[Path]) -> None:
    """One requirement line as the parser read it: an editable or a bare link, else a requirement."""
    filename = req.filename or str(path)
    where = _where(_shown(filename, path, arg), req.line_number)
    no_deps = Path(filename).resolve() in no_deps_files
    base = Path(filename).parent
    if req.is_editable or (req.name is None and req.link is not None):
        target = _local(str(req.link.url if hasattr(req.link, "url") else req.link), base)
        text = f"-e {target}" if req.is_editable else target
        # `#egg=NAME` names it: judged by that name (the Unsloth family, CUDA-12 names …)
        key = canonicalize_name(req.name) if req.name else None
        inputs.requirements.append(
            Declared(key, text, where, editable=req.is_editable, url=target, no_deps=no_deps)
        )
        return
    if req.req is None:
        return
    r: Requirement = req.req
    if r.marker is None and req.marker is not None:
        r = Requirement(f"{r} ; {req.marker}")  # the parser keeps the marker beside the requirement
    if r.url is None and req.link is not None:  # `git+https://…#egg=NAME`: the parser keeps the URL apart
        r.url = str(req.link.url)
    _add(inputs, r, where, base, no_deps, bool(req.is_constraint), bool(req.is_editable))


def _add(
    inputs: Inputs,
    r: Requirement,
    where: str,
    base: Path,
    no_deps: bool,
    constraint: bool,
    editable: bool = False,
) -> None:
    text = str(r)
    if r.url:
        extras_part = f"[{','.join(sorted(r.extras))}]" if r.extras else ""
        text = f"{r.name}{extras_part} @ {_local(r.url, base)}"
        if r.marker:
            text += f" ; {r.marker}"
    inputs.requirements.append(
        Declared(
            canonicalize_name(r.name),
            text,
            where,
            r.specifier,
            r.marker,
            frozenset(r.extras),
            r.url,
            editable,
            constraint,
            no_deps,
        )
    )


def _shown(filename: str, path: Path, arg: str) -> str:
    """Show a file the way the user named it (the top file as given, includes relative to it)."""
    try:
        if Path(filename).resolve() == path.resolve():
            return arg
        return str(Path(arg).parent / Path(filename).resolve().relative_to(path.resolve().parent))
    except ValueError:
        return filename


def _local(value: str, base: Path) -> str:
    """Relative paths in a requirements file are relative to that file; the resolver runs elsewhere."""
    if "://" in value or value.startswith(("file:", "git+")):
        return value
    candidate = base / value
    return str(candidate.resolve()) if candidate.exists() or value.startswith(".") else value


def _pyproject_groups(
    data: dict[str, Any],
    project: dict[str, Any],
    settings: dict[str, Any],
    extras: list[str],
    wanted_groups: list[str],
    arg: str,
) -> list[tuple[str, list[Any]]]:
    """The dependency lists asked for: the project's, each extra's, each dependency group's."""
    groups: list[tuple[str, list[Any]]] = [("dependencies", project.get("dependencies", []) or [])]
    optional = project.get("optional-dependencies", {}) or {}
    for extra in [*extras, *settings.get("extras", [])]:
        if extra not in optional:
            raise SparkenvError(f"{arg}: no optional-dependencies group {extra!r}")
        groups.append((f"optional-dependencies.{extra}", optional[extra]))
    for name in [*wanted_groups, *settings.get("groups", [])]:
        groups.append((f"dependency-groups.{name}", _dependency_group(data, name, arg)))
    return groups


def _pyproject_requirement(dep: Any, lines: list[str], arg: str, no_deps: set[str]) -> Declared:
    """One requirement string of pyproject.toml, placed at the first line that quotes it."""
    lineno = next((i for i, ln in enumerate(lines, 1) if f'"{dep}"' in ln or f"'{dep}'" in ln), None)
    where = _where(arg, lineno)
    try:
        r = Requirement(str(dep))
    except InvalidRequirement as exc:
        why = excerpt(str(exc).splitlines()[0])
        raise SparkenvError(f"{where}: invalid requirement {excerpt(repr(dep))}: {why}") from None
    key = canonicalize_name(r.name)
    return Declared(
        key,
        str(r) if not r.url else str(dep),
        where,
        r.specifier,
        r.marker,
        frozenset(r.extras),
        r.url,
        no_deps=key in no_deps,
    )


def _dependency_group(data: dict[str, Any], name: str, arg: str, seen: tuple[str, ...] = ()) -> list[str]:
    """PEP 735: a group's requirement strings, `{include-group = "other"}` entries expanded."""
    groups = data.get("dependency-groups", {}) or {}
    if not isinstance(groups, dict):
        raise SparkenvError(f"{arg}: [dependency-groups] must be a table")
    by_key = {canonicalize_name(k): v for k, v in groups.items()}
    key = canonicalize_name(name)
    if key not in by_key:
        raise SparkenvError(
            f"{arg}: no [dependency-groups] group {name!r} (it has {', '.join(groups) or 'none'})"
        )
    if key in seen:
        raise SparkenvError(
            f"{arg}: [dependency-groups] {name!r} includes itself ({' → '.join([*seen, key])})"
        )
    out: list[str] = []
    for entry in by_key[key] if isinstance(by_key[key], list) else [by_key[key]]:
        if isinstance(entry, str):
            out.append(entry)
        elif isinstance(entry, dict) and isinstance(entry.get("include-group"), str):
            out += _dependency_group(data, entry["include-group"], arg, (*seen, key))
        else:
            raise SparkenvError(
                f"{arg}: [dependency-groups] {name!r}: {entry!r} is neither a requirement string "
                'nor {include-group = "NAME"}'
            )
    return out


def _pyproject_data(arg: str) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """A pyproject.toml's text, its table and its type-checked [tool.sparkenv] settings."""
    from sparkenv.core.datafiles import parse_user_toml

    text = safe_read.read_text(arg, what="a pyproject.toml", limit=16 << 20)
    data = parse_user_toml(text, arg)
    schema.check(data, {"project": schema.TABLE, "tool": schema.TABLE}, arg)
    schema.check(data.get("tool", {}), {"sparkenv": schema.TABLE}, arg, "tool.")
    settings = data.get("tool", {}).get("sparkenv", {}) or {}
    schema.check(settings, _SETTINGS, arg, "[tool.sparkenv] ")
    unknown_keys(settings, arg)
    return text, data, settings


STRICT_CONFIG = "SPARKENV_STRICT_CONFIG"  # `sparkenv --strict-config` sets it: an unknown key is exit 2
_warned: set[tuple[str, str]] = set()


def unknown_keys(settings: dict[str, Any], arg: str) -> None:
    """A [tool.sparkenv] key sparkenv does not read is a typo more often than not (`profil =` would
    target the default profile): a warning naming it and the closest known key, once per file and key;
    under --strict-config ($SPARKENV_STRICT_CONFIG=1) exit 2, as ruff refuses one."""
    import difflib
    import os
    import sys

    for key in sorted(k for k in settings if k not in _SETTINGS):
        close = difflib.get_close_matches(key, list(_SETTINGS), n=1, cutoff=0.6)
        hint = f"did you mean `{close[0]}`?" if close else f"known keys: {', '.join(_SETTINGS)}"
        line = f"{arg}: [tool.sparkenv] unknown key `{key}` ({hint})"
        if os.environ.get(STRICT_CONFIG, "") not in ("", "0"):
            raise SparkenvError(f"{line}; refused under --strict-config")
        if (arg, key) not in _warned:
            _warned.add((arg, key))
            print(f"sparkenv: warning: {line}; ignored", file=sys.stderr, flush=True)


def project_settings(arg: str) -> dict[str, Any]:
    """[tool.sparkenv] of a pyproject.toml that is not an input (the project root's): only that table."""
    return _pyproject_data(arg)[2]


def _pyproject(path: Path, arg: str, inputs: Inputs, extras: list[str], wanted_groups: list[str]) -> None:
    text, data, settings = _pyproject_data(arg)
    inputs.files.append(path.resolve())
    project = data.get("project", {}) or {}
    schema.check(
        project,
        {"dependencies": schema.STRINGS, "optional-dependencies": schema.TABLE_OF_STRINGS},
        arg,
        "project.",
    )
    inputs.settings.update(settings)
    groups = _pyproject_groups(data, project, settings, extras, wanted_groups, arg)
    no_deps = {canonicalize_name(n) for n in settings.get("no-deps", [])}
    lines = text.splitlines()
    for group, deps in groups:
        if not isinstance(deps, list):
            raise SparkenvError(f"{arg}: [project].{group} must be a list of requirement strings")
        for dep in deps:
            inputs.requirements.append(_pyproject_requirement(dep, lines, arg, no_deps))
    if settings.get("index-url"):
        inputs.index_url = str(settings["index-url"])
    for url in settings.get("extra-index-url", []) or []:
        if url not in inputs.extra_index_urls:
            inputs.extra_index_urls.append(str(url))


def profile_for(arg: str | None, platform: str | None, inp: Inputs | None) -> profiles.Profile:
    """The target: --profile, else the inputs' [tool.sparkenv] profile, else the project root's
    pyproject.toml [tool.sparkenv] profile (a requirements file in a project that names its profile
    there, or `build` with no input), else the default."""
    arg, base_dir = named_profile(arg, inp)
    return profiles.load(arg, base_dir).with_platform(platform)


def named_profile(arg: str | None, inp: Inputs | None) -> tuple[str | None, Path | None]:
    """The profile something names (--profile, the inputs' or the project's [tool.sparkenv]) and the
    folder it is relative to; (None, None) when only the default is left."""
    base_dir = None
    if not arg and inp is not None:
        arg = inp.settings.get("profile") or inp.settings.get("profile-file")
        base_dir = inp.files[0].parent if inp.files else None
    if not arg:
        arg, base_dir = _project_profile()
    return arg, base_dir


def _project_profile() -> tuple[str | None, Path | None]:
    """The profile the project root's pyproject.toml names in [tool.sparkenv], and the folder it is
    relative to; (None, None) when there is none."""
    pyproject = project.root() / "pyproject.toml"
    if not pyproject.is_file():
        return None, None
    settings = project_settings(project.from_here(pyproject))
    return settings.get("profile") or settings.get("profile-file"), pyproject.parent
