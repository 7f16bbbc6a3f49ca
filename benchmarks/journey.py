"""Which of sparkenv's files a command's journey passes through, and how often it enters each.

    python benchmarks/journey.py [--top 15] [--sites] [--json] [--cold] [--whole]
                                 [--orchestration resolve/,lock/api.py] -- lock INPUT --profile ...

Runs `sparkenv ARGS...` in this process (as `python -m sparkenv` does) with a profile hook on every
thread and records each call of a function of the package. Module bodies run by an import, and what
they call, are not the journey (imports are counted apart). An ENTRY into a file is one distinct call
site in another file (file:line) with the function of this file it calls: a loop that calls the same
function from the same line a thousand times enters its file once; three calls of a file's helpers from
three lines enter it three times.

Two views:
- the journey (default): the calls the command's orchestration makes. --orchestration names its files
  (folders end in /; default: the check / lock / lock --check orchestrators in resolve/ and the lock
  stage's API, lock/api.py; `cli/,resolve/,lock/api.py` adds the dispatch every command shares). A
  file is passed through when the orchestration calls into it (the first file the command enters
  included); each owner's own calls inside are that owner's business. This is what "the lock journey
  passes through <= 20 files and enters no file more than 4 times" bounds (tests/lock/test_lock_journey.py).
- --whole: every call from any file of the package into another (readers, rules, core included).

--json prints the figures as one object on stdout (the command's own output goes to stderr). --cold: a
fresh, empty SPARKENV_CACHE_DIR and UV_CACHE_DIR for this run. The command writes where its options say
(give `lock` an --output-dir in a temporary folder).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

ROOT = Path(__file__).resolve().parent.parent
PKG = str(ROOT / "sparkenv") + os.sep
ORCHESTRATION = ("sparkenv/resolve/", "sparkenv/lock/api.py")

# file entered -> {(call site "file:line" or "<command>"/"<thread>", function)}; and the dynamic count
Entries = dict[str, set[tuple[str, str]]]


class Journey:
    def __init__(self) -> None:
        self.entries: Entries = defaultdict(set)
        self.calls: dict[str, int] = defaultdict(int)
        self.imported: set[str] = set()
        self.rc = 0

    def view(self, orchestration: tuple[str, ...] | None) -> Entries:
        """The entries the orchestration makes (None: every entry)."""
        if orchestration is None:
            return dict(self.entries)
        out: Entries = {}
        for name, sites in self.entries.items():
            kept = {(s, fn) for s, fn in sites if s == "<command>" or s.startswith(orchestration)}
            if kept:
                out[name] = kept
        return out


def _short(path: str) -> str:
    return "sparkenv/" + path[len(PKG) :]


def trace(argv: list[str], report: Callable[[Journey], None]) -> None:
    """Run `sparkenv ARGV` here, recording the journey; `report` is given it when the command ends (a
    command may end the process itself, without the interpreter's teardown: cli/process_exit.leave)."""
    journey = Journey()
    importing: dict[int, int] = defaultdict(int)  # per thread: module bodies under way
    lock = threading.Lock()
    main_ident = threading.get_ident()

    def hook(frame, event, arg):  # type: ignore[no-untyped-def]
        code = frame.f_code
        if event == "return":
            if code.co_name == "<module>":
                importing[threading.get_ident()] -= 1
            return
        if event != "call":
            return
        ident = threading.get_ident()
        if code.co_name == "<module>":
            importing[ident] += 1
            if code.co_filename.startswith(PKG):
                journey.imported.add(_short(code.co_filename))
            return
        if importing[ident] or not code.co_filename.startswith(PKG):
            return
        here = code.co_filename
        caller = frame.f_back
        while caller is not None and not caller.f_code.co_filename.startswith(PKG):
            caller = caller.f_back
        if caller is not None and caller.f_code.co_filename == here:
            return
        if caller is not None:
            site = f"{_short(caller.f_code.co_filename)}:{caller.f_lineno}"
        else:
            site = "<command>" if ident == main_ident else "<thread>"
        name = _short(here)
        with lock:
            journey.entries[name].add((site, code.co_name))
            journey.calls[name] += 1

    def end(code: int) -> None:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
        journey.rc = code
        report(journey)

    real_exit = os._exit

    def leave(code: int) -> None:
        end(code)
        real_exit(code)

    os._exit = leave
    sys.argv = ["sparkenv", *argv]
    threading.setprofile(hook)
    sys.setprofile(hook)
    try:
        from sparkenv.cli.entry import main

        main()
    except SystemExit as exc:
        end(exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2))
    else:
        end(0)


def _summary(entries: Entries) -> list[object]:
    top = max(entries.items(), key=lambda kv: len(kv[1]), default=("", set()))
    return [len(entries), len(top[1]), top[0]]


VIEWS = {"journey": ORCHESTRATION, "with cli": ("sparkenv/cli/", *ORCHESTRATION), "whole": None}


def _summary(entries: Entries) -> list[object]:
    top = max(entries.items(), key=lambda kv: len(kv[1]), default=("", set()))
    return [len(entries), len(top[1]), top[0]]


def _report(journey: Journey, ns: argparse.Namespace, args: list[str], out: TextIO) -> None:
    sys.stdout.flush()
    sys.stdout = out
    orchestration = None if ns.whole else tuple(f"sparkenv/{p}" for p in ns.orchestration.split(",") if p)
    entries = journey.view(orchestration)
    rows = sorted(entries.items(), key=lambda kv: (-len(kv[1]), -journey.calls[kv[0]], kv[0]))
    if ns.json:
        print(
            json.dumps(
                {
                    "rc": journey.rc,
                    "view": "whole" if orchestration is None else list(orchestration),
                    "files": sorted(entries),
                    "entries": {f: len(s) for f, s in rows},
                    "sites": {f: sorted(f"{s} -> {fn}" for s, fn in sites) for f, sites in rows},
                    "imported": len(journey.imported),
                    # the same run in each view: files passed through, the most entries, that file
                    "views": {name: _summary(journey.view(v)) for name, v in VIEWS.items()},
                }
            ),
            flush=True,
        )
        return
    view = "every call" if orchestration is None else f"calls from {', '.join(orchestration)}"
    print(f"sparkenv {' '.join(args)}: exit {journey.rc}")
    print(f"files passed through ({view}): {len(rows)}; modules imported: {len(journey.imported)}")
    print(f"{'entries':>7} {'calls':>7}  file")
    for name, sites in rows[: ns.top]:
        print(f"{len(sites):>7} {journey.calls[name]:>7}  {name}")
        if ns.sites:
            for site, fn in sorted(sites):
                print(f"{'':>17}{site} -> {fn}")
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=int, default=15, help="files to list, most entered first")
    parser.add_argument("--sites", action="store_true", help="list each listed file's entries")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    parser.add_argument("--cold", action="store_true", help="fresh, empty sparkenv and uv caches")
    parser.add_argument("--whole", action="store_true", help="every call, not the orchestration's alone")
    parser.add_argument(
        "--orchestration",
        default=",".join(p.removeprefix("sparkenv/") for p in ORCHESTRATION),
        help="the orchestration's files and folders (folders end in /), under sparkenv/",
    )
    parser.add_argument("args", nargs=argparse.REMAINDER, help="sparkenv's arguments (after --)")
    ns = parser.parse_args()
    args = ns.args[1:] if ns.args[:1] == ["--"] else ns.args
    if ns.cold:
        os.environ["SPARKENV_CACHE_DIR"] = tempfile.mkdtemp(prefix="journey-sparkenv-")
        os.environ["UV_CACHE_DIR"] = tempfile.mkdtemp(prefix="journey-uv-")
    sys.path.insert(0, str(ROOT))
    real_stdout = sys.stdout
    if ns.json:
        sys.stdout = sys.stderr
    trace(args, lambda journey: _report(journey, ns, args, real_stdout))


if __name__ == "__main__":
    main()
