"""Mutation testing of the judgement code with mutmut 3, on the modules a change touched.

    python3 benchmarks/mutation.py                      # modules changed against origin/main or main
    python3 benchmarks/mutation.py --base HEAD~3        # ... against another ref
    python3 benchmarks/mutation.py --module sparkenv/rules/parallelism.py --sample 60 --seed 44
    python3 benchmarks/mutation.py --module M --tests-from 1c0afb5   # the same mutants, older tests

Each module is mutated alone in a scratch copy of this working tree (mutmut writes its `mutants/` folder
beside the code it copies): `[tool.mutmut]` in pyproject.toml says which modules may be mutated
(`only_mutate`) and, under `sparkenv_tests`, the tests each one needs (the first entry whose glob
matches; mutmut itself reads neither that table nor benchmarks/mutation_equivalent.toml). mutmut 3 has
no sampling, so this script lists the module's mutants (a first mutmut run that generates them and
records which tests reach which function), draws `--sample` of them with `--seed`, and runs only
those. It prints per module the score (killed / (sampled − equivalent)), and each surviving mutant as a
diff; a survivor listed in benchmarks/mutation_equivalent.toml (module, original line, mutated line,
reason) is counted as equivalent, not as a survivor. Not part of .ci/run: it takes minutes per module.

mutmut runs the tests in its own process and forks one child per mutant; a test that runs sparkenv in a
separate process (`python -m sparkenv …`) runs the unmutated package, so only in-process tests can kill a
mutant, and the selections name those. PYTHONPATH is removed from mutmut's environment: set, mutmut's
own path set-up did not see the tests reach any mutated function."""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[1]
EQUIVALENT = ROOT / "benchmarks" / "mutation_equivalent.toml"
LIST_ONLY = "__sparkenv_list_only__"  # a name no mutant has: mutmut generates, collects stats, stops
# mutmut's exit codes per mutant (mutmut/stats.py status_by_exit_code): a timeout detected the mutant
KILLED = {1, 3, -24, 24, 36, 152, 255, -11, -9, 37}
SURVIVED = {0}
NO_TESTS = {5, 33}


@dataclass
class Outcome:
    module: str
    total: int
    sampled: list[str]
    codes: dict[str, int | None]
    equivalent: dict[str, str] = field(default_factory=dict)  # name -> reason
    diffs: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    def names(self, codes: set[int]) -> list[str]:
        return [n for n in self.sampled if self.codes.get(n) in codes and n not in self.equivalent]

    @property
    def score(self) -> float:
        judged = len(self.sampled) - len(self.equivalent)
        return 100.0 * len(self.names(KILLED)) / judged if judged else 100.0


def config() -> dict:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    try:
        return data["tool"]["mutmut"]
    except KeyError:
        sys.exit("benchmarks/mutation.py: pyproject.toml has no [tool.mutmut] table")


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout


def changed_modules(base: str | None, patterns: list[str]) -> list[str]:
    """Python modules under the mutated globs that differ from `base` (committed or not)."""
    if base is None:
        for ref in ("origin/main", "main"):
            if (
                subprocess.run(
                    ["git", "rev-parse", "-q", "--verify", ref], cwd=ROOT, capture_output=True
                ).returncode
                == 0
            ):
                base = ref
                break
        else:
            sys.exit("benchmarks/mutation.py: no main branch to compare with; pass --base REF or --module")
    names = set(git("diff", "--name-only", base, "--", "sparkenv").split())
    names |= set(git("ls-files", "--others", "--exclude-standard", "--", "sparkenv").split())
    return sorted(
        n
        for n in names
        if n.endswith(".py") and (ROOT / n).exists() and any(fnmatch.fnmatch(n, p) for p in patterns)
    )


def tests_for(module: str, cfg: dict) -> list[str]:
    for entry in cfg.get("sparkenv_tests", []):
        if fnmatch.fnmatch(module, entry["module"]):
            return list(entry["tests"])
    return list(cfg.get("pytest_add_cli_args_test_selection", []))


def scratch_copy(dest: Path, tests_from: str | None) -> None:
    """The working tree's tracked and untracked (not ignored) files; tests/ from `tests_from` if given."""
    files = git("ls-files", "-co", "--exclude-standard", "-z").split("\0")
    for rel in files:
        if not rel or (tests_from and rel.startswith("tests/")):
            continue
        src = ROOT / rel
        if src.is_file() and not src.is_symlink():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    if tests_from:
        archive = subprocess.run(
            ["git", "archive", "--format=tar", tests_from, "tests"], cwd=ROOT, check=True, capture_output=True
        ).stdout
        with tarfile.open(fileobj=BytesIO(archive)) as tar:
            tar.extractall(dest, filter="data") if sys.version_info >= (3, 12) else tar.extractall(dest)


def module_config(text: str, module: str, tests: list[str], cfg: dict) -> str:
    """pyproject.toml with its [tool.mutmut] tables replaced by one for `module` and its tests."""
    out, skipping = [], False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("["):
            skipping = stripped.lstrip("[").startswith("tool.mutmut")
        if not skipping:
            out.append(line)
    extra = cfg.get("pytest_add_cli_args", [])
    out += [
        "",
        "[tool.mutmut]",
        'source_paths = ["sparkenv"]',
        f"only_mutate = [{json.dumps(module)}]",
        f"pytest_add_cli_args = {json.dumps(extra)}",
        f"pytest_add_cli_args_test_selection = {json.dumps(tests)}",
        f"also_copy = {json.dumps(cfg.get('also_copy', []))}",
        *(
            f"{key} = {json.dumps(cfg[key])}"
            for key in ("timeout_multiplier", "timeout_constant")
            if key in cfg
        ),
    ]
    return "\n".join(out) + "\n"


def mutmut(argv: list[str], cwd: Path, env: dict[str, str], log: Path) -> int:
    with log.open("a") as fh:
        fh.write(f"\n$ {' '.join(argv)}\n")
        fh.flush()
        return subprocess.run(argv, cwd=cwd, env=env, stdout=fh, stderr=subprocess.STDOUT).returncode


def equivalents() -> list[dict]:
    if not EQUIVALENT.exists():
        return []
    return list(tomllib.loads(EQUIVALENT.read_text()).get("equivalent", []))


def changed_lines(diff: str) -> tuple[str, str]:
    """(original, mutated) lines of a one-line mutant's diff, stripped."""
    minus = [ln[1:].strip() for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    plus = [ln[1:].strip() for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    return " ".join(minus), " ".join(plus)


def run_module(module: str, args: argparse.Namespace, cfg: dict, exe: list[str]) -> Outcome:
    started = time.monotonic()
    tests = tests_for(module, cfg)
    work = Path(tempfile.mkdtemp(prefix="sparkenv-mutation-"))
    log = work / "mutmut.log"
    try:
        scratch_copy(work, args.tests_from)
        tests = [t for t in tests if (work / t).exists()]
        if not tests:
            sys.exit(f"benchmarks/mutation.py: no test of {module}'s selection exists")
        pyproject = work / "pyproject.toml"
        pyproject.write_text(module_config(pyproject.read_text(), module, tests, cfg))
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MUTANT_UNDER_TEST")}
        env["SPARKENV_CACHE_DIR"] = str(work / "cache")
        env.setdefault("SPARKENV_FUZZ_EXAMPLES", str(args.fuzz_examples))
        dotted = module.removesuffix(".py").replace("/", ".")
        jobs = ["--max-children", str(args.jobs)]
        mutmut([*exe, "run", *jobs, f"{dotted}.{LIST_ONLY}"], work, env, log)
        meta = work / "mutants" / f"{module}.meta"
        if not meta.exists():
            tail = log.read_text()[-3000:]
            sys.exit(f"benchmarks/mutation.py: mutmut made no mutants of {module}:\n{tail}")
        names = sorted(json.loads(meta.read_text())["exit_code_by_key"])
        sampled = sorted(random.Random(args.seed).sample(names, min(args.sample, len(names))))
        mutmut([*exe, "run", *jobs, *sampled], work, env, log)
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        if all(codes.get(n) is None for n in sampled):
            tail = log.read_text().replace("\r", "\n")[-3000:]
            sys.exit(f"benchmarks/mutation.py: mutmut ran none of {module}'s mutants:\n{tail}")
        out = Outcome(module, len(names), sampled, {n: codes.get(n) for n in sampled})
        known = [e for e in equivalents() if e["module"] == module]
        for name in out.names(SURVIVED | NO_TESTS):
            shown = subprocess.run(
                [*exe, "show", name], cwd=work, env=env, capture_output=True, text=True
            ).stdout
            out.diffs[name] = shown
            original, mutated = changed_lines(shown)
            for e in known:
                if (e["original"].strip(), e["mutated"].strip()) == (original, mutated):
                    out.equivalent[name] = e["reason"]
        out.seconds = time.monotonic() - started
        if args.keep:
            print(f"kept {work}", file=sys.stderr)
        return out
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def report(out: Outcome, args: argparse.Namespace) -> None:
    killed, survived, untested = out.names(KILLED), out.names(SURVIVED), out.names(NO_TESTS)
    unknown = [n for n in out.sampled if out.codes.get(n) not in KILLED | SURVIVED | NO_TESTS]
    print(
        f"{out.module}: {out.score:.1f} % — {len(killed)} killed, {len(survived)} survived, "
        f"{len(untested)} reached by no selected test, {len(out.equivalent)} equivalent, "
        f"{len(unknown)} not run "
        f"(sample {len(out.sampled)} of {out.total}, seed {args.seed}, {out.seconds:.0f} s"
        + (f", tests from {args.tests_from}" if args.tests_from else "")
        + ")"
    )
    for name in survived + untested:
        print(f"  survived: {name}" + (" (no test reaches it)" if name in untested else ""))
        body = [
            ln
            for ln in out.diffs[name].splitlines()[1:]
            if ln.startswith(("-", "+")) and ln[:3] not in ("---", "+++")
        ]
        for ln in body:
            print(f"    {ln}")
    for name, reason in out.equivalent.items():
        print(f"  equivalent: {name}: {reason}")
    for name in unknown:
        print(f"  not run: {name} (mutmut status {out.codes.get(name)})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", help="git ref to compare with (default: origin/main, else main)")
    ap.add_argument(
        "--module", action="append", help="a module to mutate (repeatable); default: the changed ones"
    )
    ap.add_argument("--sample", type=int, default=60, help="mutants drawn per module (default 60)")
    ap.add_argument("--seed", type=int, default=44, help="seed of the draw (default 44)")
    ap.add_argument("--tests-from", help="take tests/ from this git ref (a before/after comparison)")
    ap.add_argument("--jobs", type=int, default=2, help="mutants run at once (default 2)")
    ap.add_argument("--fuzz-examples", type=int, default=30, help="SPARKENV_FUZZ_EXAMPLES for the tests")
    ap.add_argument("--mutmut", default=None, help="the mutmut command (default: mutmut on PATH)")
    ap.add_argument(
        "--keep", action="store_true", help="keep the scratch copy (to run `mutmut browse` there)"
    )
    args = ap.parse_args()
    cfg = config()
    exe = [args.mutmut] if args.mutmut else [shutil.which("mutmut") or ""]
    if not exe[0]:
        sys.exit("benchmarks/mutation.py: mutmut not found; `pip install mutmut==3.8.1` or pass --mutmut")
    patterns = list(cfg.get("only_mutate", []))
    modules = args.module or changed_modules(args.base, patterns)
    outside = [m for m in modules if not any(fnmatch.fnmatch(m, p) for p in patterns)]
    if outside:
        sys.exit(f"benchmarks/mutation.py: {', '.join(outside)} not under [tool.mutmut] only_mutate")
    if not modules:
        print("no module under [tool.mutmut] only_mutate changed")
        return
    for module in modules:
        report(run_module(module, args, cfg, exe), args)


if __name__ == "__main__":
    main()
