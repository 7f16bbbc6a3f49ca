"""What an sdist builds, read from the sdist itself: the build files that say it compiles CUDA or C++
against torch, or native code, or nothing (pure Python).

An sdist is one compressed tar (or a zip): no range reading helps, so it is downloaded up to a cap
(SDIST_CAP) into a temporary file and only its build files are read: `pyproject.toml` (build-system
requires), `setup.py`/`setup.cfg`, `CMakeLists.txt`, and the names of its source files (`*.cu`,
`*.cpp`, `*.c`, `*.pyx`). What these say is facts (facts/resolved.py's SdistBuild); which of them makes
an sdist a FAIL at lock is rules/g2.py's. Results are cached by the file's sha256, like metadata.
"""

from __future__ import annotations

import json
import re
import tarfile
import tempfile
import zipfile
import zlib
from concurrent.futures import ThreadPoolExecutor

from sparkenv.facts.resolved import SdistBuild
from sparkenv.index import fetch, integrity, metadata

SDIST_CAP = 64 * 1024**2
# the classifier's version is in the cache's name: a changed reading never meets an old answer
CACHE_SUFFIX = ".sdist-2.json"
_BUILD_FILES = ("pyproject.toml", "setup.py", "setup.cfg", "cmakelists.txt")
_TEXT_CAP = 512 * 1024  # a build file larger than this is read up to it
# What in a build file says it compiles GPU code against torch, and the words shown as evidence
_TORCH_EXT = re.compile(
    r"torch\.utils\.cpp_extension|CUDAExtension|CppExtension|BuildExtension|find_package\(\s*Torch\b"
)
_CUDA = re.compile(r"\bnvcc\b|LANGUAGES[^)\n]*\bCUDA\b|enable_language\(\s*CUDA|CUDAToolkit|CUDA_HOME")
_NATIVE_SOURCES = (".c", ".cc", ".cpp", ".cxx", ".pyx", ".rs", ".f90")
_CUDA_SOURCES = (".cu", ".cuh")


def _requires_torch(pyproject: str) -> bool:
    from sparkenv.core.datafiles import parse_toml

    try:
        data = parse_toml(pyproject)
    except ValueError:  # TOMLDecodeError is a ValueError
        return False
    reqs = data.get("build-system", {}).get("requires", [])
    return any(re.match(r"\s*torch\b(?![-_\w])", str(r)) for r in reqs if isinstance(r, str))


_REQUEST = re.compile(r"getenv|environ|sys\.argv")


def _opt_in(text: str, at: int) -> str:
    """The `if` that guards the first torch extension use in setup.py when it asks the environment or
    the command line (`if os.getenv("BUILD_CUDA_EXTENSIONS") == "1":`): the build is opt-in; else ""."""
    start = text.rfind("\n", 0, at) + 1
    here = text[start:at]
    indent = len(here) - len(here.lstrip())
    if indent == 0:
        return ""
    for line in reversed(text[:start].splitlines()):
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or len(line) - len(line.lstrip()) >= indent:
            continue
        if stripped.startswith(("if ", "elif ")) and _REQUEST.search(stripped):
            return stripped.rstrip(":")
        return ""
    return ""


def classify(key: str, members: dict[str, str], names: list[str]) -> SdistBuild:
    """Facts of one sdist from its top-level build files (lower-cased base name -> text) and the names of
    all its files."""
    evidence, compiles, optional = _build_files(members)
    # CUDA sources alone do not compile at install: a package may build them at run time (JIT) only
    # when asked; its build files decide, the sources are evidence beside them.
    cu_files = [n for n in names if n.lower().endswith(_CUDA_SOURCES)]
    if cu_files:
        evidence.append(f"it ships {len(cu_files)} CUDA source file(s) ({cu_files[0]})")
    native = [n for n in names if n.lower().endswith(_NATIVE_SOURCES)]
    if native and not (compiles or cu_files):
        evidence.append(f"it ships {len(native)} C/C++/Cython/Rust source file(s) ({native[0]})")
    kind = "cuda" if compiles else ("native" if native or cu_files else "pure")
    if kind == "cuda" and optional:
        evidence.append(f"setup.py compiles it only on request ({optional})")
        kind = "optional"
    return SdistBuild(key, kind, tuple(evidence))


def _build_files(members: dict[str, str]) -> tuple[list[str], bool, str]:
    """(evidence, whether a build file compiles a torch extension or CUDA, the `if` in setup.py that
    makes the torch extension opt-in or "")."""
    evidence: list[str] = []
    compiles = False
    if "pyproject.toml" in members and _requires_torch(members["pyproject.toml"]):
        evidence.append("pyproject.toml's build-system requires torch")
        compiles = True
    optional = ""
    for fname in ("setup.py", "setup.cfg", "cmakelists.txt", "pyproject.toml"):
        text = members.get(fname, "")
        if m := _TORCH_EXT.search(text):
            evidence.append(f"{fname} uses {m.group(0)}")
            compiles = True
            if fname == "setup.py":
                optional = _opt_in(text, m.start())
        if m := _CUDA.search(text):
            evidence.append(f"{fname} names {m.group(0).strip()}")
            compiles = True
    return evidence, compiles, optional


def _read(url: str, filename: str, timeout: float, sha256: str = "") -> tuple[dict[str, str], list[str]]:
    """(top-level build files, every file name) of a remote sdist; raises OSError or ValueError (also
    when its bytes do not match the index's `sha256`)."""
    with fetch.urlopen(url, timeout) as resp, tempfile.TemporaryFile() as spool:
        copied = 0
        while chunk := resp.read(1 << 20):
            copied += len(chunk)
            if copied > SDIST_CAP:
                raise ValueError(f"larger than {SDIST_CAP >> 20} MiB, not read")
            spool.write(chunk)
        if (mismatch := integrity.verify(spool, url, sha256)) is not None:
            raise ValueError(mismatch)
        members: dict[str, str] = {}
        names: list[str] = []
        if filename.endswith(".zip"):
            with zipfile.ZipFile(spool) as zf:
                for info in zf.infolist():
                    names.append(info.filename)
                    base = info.filename.lower().split("/")
                    if len(base) == 2 and base[1] in _BUILD_FILES:
                        with zf.open(info) as fh:
                            members[base[1]] = fh.read(_TEXT_CAP).decode("utf-8", errors="replace")
        else:
            with tarfile.open(fileobj=spool, mode="r:*") as tf:
                for member in tf:
                    if not member.isfile():
                        continue
                    names.append(member.name)
                    base = member.name.lower().split("/")
                    if len(base) == 2 and base[1] in _BUILD_FILES:
                        got = tf.extractfile(member)
                        if got is not None:
                            members[base[1]] = got.read(_TEXT_CAP).decode("utf-8", errors="replace")
    return members, names


def _cached(sha256: str) -> SdistBuild | None:
    data = metadata.STORE.load(f"{sha256}{CACHE_SUFFIX}")
    try:
        return SdistBuild(data["key"], data["kind"], tuple(data["evidence"]), via="cache")
    except (KeyError, TypeError):
        return None


def scan(refs: list[metadata.FileRef], timeout: float = 60.0) -> dict[str, SdistBuild]:
    """key -> what its sdist builds; an sdist that cannot be read is kind 'unknown' with the reason."""

    def one(ref: metadata.FileRef) -> tuple[str, SdistBuild]:
        if ref.sha256 and (hit := _cached(ref.sha256)) is not None:
            return ref.key, hit
        try:
            members, names = _read(ref.url, ref.filename, timeout, ref.sha256)
        except (OSError, ValueError, EOFError, tarfile.TarError, zipfile.BadZipFile, zlib.error) as exc:
            return ref.key, SdistBuild(ref.key, "unknown", (f"{ref.filename}: {exc}",))
        got = classify(ref.key, members, names)
        if ref.sha256:
            payload = {"key": got.key, "kind": got.kind, "evidence": list(got.evidence)}
            metadata.store(ref.sha256, json.dumps(payload), CACHE_SUFFIX)
        return ref.key, got

    if not refs:
        return {}
    with ThreadPoolExecutor(min(8, len(refs))) as pool:
        return dict(pool.map(one, refs))
