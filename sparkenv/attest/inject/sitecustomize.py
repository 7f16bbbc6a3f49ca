"""sparkenv attest's probe, loaded into the workload's own interpreter as `sitecustomize` (its folder first
on PYTHONPATH): for a bounded window after `import torch` finishes, torch's profiler records every GPU
kernel and operator; then it stops, its buffers are freed and the workload goes on untouched. Standard
library only (the workload's environment need not have sparkenv); it starts no process and sends nothing.

- Start: on the thread that finishes `import torch` (a finder wraps torch's loader), when that is the main
  thread: the profiler records operators per thread.
- End: a timer thread asks the main thread to stop the profiler with Py_AddPendingCall (no signal is
  sent); `--steps` ends it at the N-th optimizer step; interpreter exit too. A main thread that never
  returns to Python keeps it running, and the record says so ("late").
- Record: attest-<pid>.jsonl in $SPARKENV_ATTEST_DIR, flushed as written (a header, a tick a second, the
  window's rows, an end line), so a killed run leaves a readable partial record.

Variables: SPARKENV_ATTEST_DIR (on), SPARKENV_ATTEST_SECONDS, SPARKENV_ATTEST_STEPS, SPARKENV_ATTEST_MARKERS
(`|`-separated parts of operator names kept as a kernel's callers). Another sitecustomize further down
the path runs too.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DIR = "SPARKENV_ATTEST_DIR"
SECONDS = "SPARKENV_ATTEST_SECONDS"
STEPS = "SPARKENV_ATTEST_STEPS"
MARKERS = "SPARKENV_ATTEST_MARKERS"
RECORD_VERSION = 1
TICK_S = 1.0
GRACE_S = 5.0  # after the deadline, how often the record says the main thread has not stopped it yet
_MARK = "_sparkenv_attest"


def _write(fh: Any, row: dict[str, Any]) -> None:
    fh.write(json.dumps(row, separators=(",", ":")) + "\n")
    fh.flush()


class Window:
    """One process's window: started once, ended once (whichever comes first: time, steps, exit)."""

    def __init__(self, folder: str, seconds: float, steps: int, markers: tuple[str, ...]) -> None:
        self.folder, self.seconds, self.steps, self.markers = folder, seconds, steps, markers
        self.lock = threading.Lock()
        self.started = self.ended = False
        self.fh: Any = None
        self.t0 = 0.0
        self.owner = os.getpid()
        self.steps_seen = 0
        self.hook: Any = None
        self.thread_id = 0
        self._pending: Any = None  # the ctypes callback must outlive the pending call

    # -- start ------------------------------------------------------------------------------------
    def start(self, torch: Any) -> None:
        with self.lock:
            if self.started or os.getpid() != self.owner:
                return
            self.started = True
        os.makedirs(self.folder, exist_ok=True)
        path = os.path.join(self.folder, f"attest-{os.getpid()}.jsonl")
        self.fh = open(path, "a", encoding="utf-8")  # noqa: SIM115 — open for the window's life
        self.path = path
        header: dict[str, Any] = {
            "kind": "header",
            "version": RECORD_VERSION,
            "pid": os.getpid(),
            "argv": list(sys.argv),
            "python": sys.executable,
            "torch": getattr(torch, "__version__", None),
            "torch_cuda": getattr(getattr(torch, "version", None), "cuda", None),
            "window_s": self.seconds,
            "steps": self.steps,
            "jit_cache": os.environ.get("CUDA_CACHE_PATH"),
            "started": time.time(),
        }
        if threading.current_thread() is not threading.main_thread():
            header["problem"] = "torch was imported off the main thread: its operators are not profiled"
            _write(self.fh, header)
            return self._close()
        try:
            from torch._C._profiler import _ExperimentalConfig
            from torch.autograd import (
                ProfilerActivity,
                ProfilerConfig,
                ProfilerState,
                _enable_profiler,
                _prepare_profiler,
                _supported_activities,
            )

            acts = {ProfilerActivity.CPU}
            if ProfilerActivity.CUDA in _supported_activities():
                acts.add(ProfilerActivity.CUDA)
            header["activities"] = sorted(a.name for a in acts)
            config = ProfilerConfig(
                ProfilerState.KINETO, False, False, False, False, False, _ExperimentalConfig()
            )
            _prepare_profiler(config, acts)
            _enable_profiler(config, acts)
        except Exception as exc:  # another torch, a profiler already running: said, the workload goes on
            header["problem"] = f"torch's profiler could not start: {exc.__class__.__name__}: {exc}"
            _write(self.fh, header)
            return self._close()
        self.t0 = time.monotonic()
        self.thread_id = threading.get_ident()
        _write(self.fh, header)
        if self.steps > 0:
            self._hook_steps()
        threading.Thread(target=self._timer, name="sparkenv-attest", daemon=True).start()

    def _hook_steps(self) -> None:
        try:
            from torch.optim.optimizer import register_optimizer_step_post_hook
        except ImportError:
            return

        def counted(*_args: Any) -> None:
            self.steps_seen += 1
            if self.steps_seen >= self.steps:
                self.stop("steps") if threading.get_ident() == self.thread_id else self._ask_main("steps")

        self.hook = register_optimizer_step_post_hook(counted)

    # -- the hard end --------------------------------------------------------------------------------
    def _timer(self) -> None:
        deadline = self.t0 + self.seconds
        while not self.ended:
            now = time.monotonic()
            if now >= deadline:
                break
            time.sleep(min(TICK_S, deadline - now))
            if not self.ended and self.fh is not None:
                try:
                    _write(self.fh, {"kind": "tick", "t": round(time.monotonic() - self.t0, 3)})
                except (OSError, ValueError):
                    return
        if self.ended:
            return
        self._ask_main("seconds")
        while not self.ended:
            time.sleep(GRACE_S)
            if not self.ended and self.fh is not None:
                try:
                    _write(self.fh, {"kind": "late", "t": round(time.monotonic() - self.t0, 3)})
                except (OSError, ValueError):
                    return

    def _ask_main(self, reason: str) -> None:
        """Run stop() on the main thread at its next bytecode (torch's profiler is per thread)."""
        import ctypes

        kind = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)

        def call(_arg: Any) -> int:
            try:  # noqa: SIM105 — contextlib is not imported into every workload for this
                self.stop(reason)
            except Exception:  # never into the workload's frame
                pass
            return 0

        self._pending = kind(call)
        add = ctypes.pythonapi.Py_AddPendingCall
        add.argtypes = [kind, ctypes.c_void_p]
        add.restype = ctypes.c_int
        add(self._pending, None)

    # -- stop, read, write ---------------------------------------------------------------------------
    def stop(self, reason: str) -> None:
        with self.lock:
            if self.ended or not self.started or self.fh is None or os.getpid() != self.owner:
                return
            self.ended = True
        from torch.autograd import _disable_profiler

        t_stop = time.monotonic()
        result = _disable_profiler()
        window = t_stop - self.t0
        if self.hook is not None:
            self.hook.remove()
        t_read = time.monotonic()
        try:
            rows, summary = read_events(result.events(), self.markers)
        except Exception as exc:
            rows, summary = [], {"problem": f"the profile could not be read: {exc.__class__.__name__}: {exc}"}
        del result  # the profiler's buffers go with it
        fh = self.fh
        for row in rows:
            _write(fh, row)
        _write(fh, {"kind": "libraries", "paths": loaded_libraries()})
        _write(fh, {"kind": "jit_cache", **jit_cache(os.environ.get("CUDA_CACHE_PATH"))})
        _write(
            fh,
            {
                "kind": "end",
                "reason": reason,
                "window_s": round(window, 6),
                "read_s": round(time.monotonic() - t_read, 3),
                "steps_seen": self.steps_seen,
                "capability": _capability(),
                **summary,
            },
        )
        self._close()

    def _close(self) -> None:
        try:  # noqa: SIM105
            self.fh.close()
        except (OSError, AttributeError):
            pass


def read_events(events: list[Any], markers: tuple[str, ...]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Kineto's events -> rows: each kernel (name, device, callers among the markers) with its count and
    GPU time; each outermost operator that touched no GPU (no GPU event linked to it or an operator inside it,
    no CUDA runtime call inside it): name, count, wall time. Operators and runtime calls nest by time on
    their thread; a GPU event names the innermost operator it was launched from (linked_correlation_id)."""
    ops: dict[int, tuple[str, int]] = {}  # correlation id -> (name, parent correlation id)
    by_thread: dict[int, list[tuple[int, int, int, str, bool]]] = {}
    device: list[Any] = []
    for e in events:
        if str(e.device_type()).endswith("CPU"):
            if e.is_async():
                continue
            by_thread.setdefault(e.start_thread_id(), []).append(
                (e.start_ns(), -e.end_ns(), e.correlation_id(), e.name(), _runtime_call(e))
            )
        elif not _annotation(e):
            device.append(e)
    spans: dict[int, tuple[int, int]] = {}  # correlation id -> (start, duration)
    called: set[int] = set()  # operators that made a CUDA runtime call (a launch, a copy, a handle's set-up)
    for rows in by_thread.values():
        rows.sort()
        stack: list[tuple[int, int]] = []  # (end, id)
        for start, neg_end, cid, name, runtime in rows:
            end = -neg_end
            while stack and stack[-1][0] <= start:
                stack.pop()
            if runtime:
                if stack:
                    called.add(stack[-1][1])
                continue
            ops[cid] = (name, stack[-1][1] if stack else 0)
            spans[cid] = (start, end - start)
            stack.append((end, cid))
    launched: set[int] = set()
    kernels: dict[tuple[str, int, str], list[int]] = {}
    device_ns = 0
    for e in device:
        dur = e.duration_ns()
        device_ns += dur
        cid = e.linked_correlation_id()
        chain: list[str] = []
        seen = 0
        while cid and cid in ops and seen < 256:  # bounded: a damaged chain never loops
            launched.add(cid)
            name, parent = ops[cid]
            if any(m in name for m in markers):
                chain.append(name)
            cid, seen = parent, seen + 1
        key = (e.name(), e.device_index(), " > ".join(reversed(chain)))
        got = kernels.setdefault(key, [0, 0])
        got[0] += 1
        got[1] += dur
    out: list[dict[str, Any]] = [
        {"kind": "kernel", "name": k[0], "device": k[1], "under": k[2], "count": c, "gpu_ns": ns}
        for k, (c, ns) in sorted(kernels.items(), key=lambda kv: -kv[1][1])
    ]
    for cid in called:  # an operator whose kernel's GPU event was lost still touched the GPU
        seen = 0
        while cid and cid in ops and cid not in launched and seen < 256:
            launched.add(cid)
            cid, seen = ops[cid][1], seen + 1
    first_gpu: dict[str, int] = {}  # each operator name's first call that touched the GPU
    for cid in launched:
        name, start = ops[cid][0], spans[cid][0]
        if start < first_gpu.get(name, start + 1):
            first_gpu[name] = start
    cpu: dict[str, list[int]] = {}
    for cid, (name, parent) in ops.items():
        if cid in launched:
            continue
        if parent and parent not in launched:
            continue  # inside an operator that ran on the CPU too: counted there
        start, took = spans[cid]
        if start < first_gpu.get(name, start):
            continue  # a first call that set up its GPU path (a library's handle, cuDNN's run-time compile)
        got = cpu.setdefault(name, [0, 0])
        got[0] += 1
        got[1] += took
    out += [
        {"kind": "cpu_op", "name": name, "count": c, "ns": ns}
        for name, (c, ns) in sorted(cpu.items(), key=lambda kv: -kv[1][1])
    ]
    summary = {"device_events": len(device), "device_ns": device_ns, "cpu_ops": len(ops)}
    return out, summary


def _annotation(e: Any) -> bool:
    """A range on the GPU's timeline (record_function's, e.g. Optimizer.step#AdamW.step) spanning kernels,
    not a kernel: counting it would count their time twice."""
    flag = getattr(e, "is_user_annotation", None)
    return bool(flag()) if flag is not None else False


def _runtime_call(e: Any) -> bool:
    """A CUDA runtime or driver call (cudaLaunchKernel, cuLaunchKernel …), not an operator. Kineto's event
    says so in activity_type where torch exposes it (not in torch 2.11); else its name does."""
    kind = getattr(e, "activity_type", None)
    if kind is not None:
        return str(kind()) not in ("cpu_op", "user_annotation")
    name = e.name()
    return name[:2] == "cu" and "::" not in name


def loaded_libraries() -> list[str]:
    """The shared objects this process has mapped: where the kernels that ran may come from."""
    found: dict[str, None] = {}
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                path = line.rstrip("\n").split(None, 5)[5:] if line.count(" ") >= 5 else []
                if path and ".so" in path[0] and path[0].startswith("/"):
                    found[path[0].strip()] = None
    except OSError:
        pass
    return list(found)


def jit_cache(folder: str | None) -> dict[str, Any]:
    """What the driver's JIT cache folder holds: files and bytes (a fresh folder: what this run compiled)."""
    if not folder:
        return {"folder": None, "files": 0, "bytes": 0}
    files = size = 0
    for root, _dirs, names in os.walk(folder):
        for n in names:
            try:
                size += os.stat(os.path.join(root, n)).st_size
                files += 1
            except OSError:
                pass
    return {"folder": folder, "files": files, "bytes": size}


def _capability() -> list[int] | None:
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_initialized():  # never initialise CUDA for the record
            return list(torch.cuda.get_device_capability())
    except Exception:
        pass
    return None


class _Finder:
    """At the front of sys.meta_path until torch is imported: wraps torch's loader so the window starts
    right after torch's own module has run."""

    def __init__(self, window: Window) -> None:
        self.window = window
        setattr(self, _MARK, RECORD_VERSION)

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "torch":
            return None
        import importlib.machinery

        sys.meta_path.remove(self)
        try:
            spec = importlib.machinery.PathFinder.find_spec(name, path)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        real, window = spec.loader, self.window

        class Loader:
            def create_module(self, spec: Any) -> Any:
                return real.create_module(spec)

            def exec_module(self, module: Any) -> None:
                real.exec_module(module)
                try:  # noqa: SIM105
                    sys.meta_path.remove(finder)
                except ValueError:
                    pass
                try:  # noqa: SIM105
                    window.start(module)
                except Exception:  # the workload's import of torch never fails because of us
                    pass

        finder = self
        spec.loader = Loader()
        return spec


def _chain() -> None:
    """Run the sitecustomize this one shadows (the next on sys.path), as the interpreter would have."""
    here = os.path.dirname(os.path.abspath(__file__))
    mine = sys.modules.pop("sitecustomize", None)
    kept = list(sys.path)
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    try:
        import sitecustomize  # noqa: F401 — the shadowed one, if any
    except ImportError:
        pass
    except Exception as exc:
        sys.stderr.write(f"Error in sitecustomize; set PYTHONVERBOSE for traceback:\n{exc}\n")
    finally:
        sys.path[:] = kept
        if mine is not None:
            sys.modules["sitecustomize"] = mine


def _boot() -> None:
    folder = os.environ.get(DIR)
    if folder and not any(getattr(f, _MARK, None) for f in sys.meta_path) and "torch" not in sys.modules:
        try:
            seconds = float(os.environ.get(SECONDS) or 30)
            steps = int(os.environ.get(STEPS) or 0)
        except ValueError:
            seconds, steps = 30.0, 0
        markers = tuple(m for m in (os.environ.get(MARKERS) or "").split("|") if m)
        window = Window(folder, seconds, steps, markers)
        sys.meta_path.insert(0, _Finder(window))
        import atexit

        atexit.register(window.stop, "exit")
        os.register_at_fork(after_in_child=lambda: setattr(window, "ended", True))


if __name__ == "sitecustomize":
    _boot()
    _chain()
