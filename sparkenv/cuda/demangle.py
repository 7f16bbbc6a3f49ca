"""C++ names as torch's profiler records kernels: Kineto demangles CUPTI's kernel names with the C++
runtime's `abi::__cxa_demangle`, so the same function (libstdc++'s, through ctypes) gives the same text for
a cubin's symbol. Where libstdc++ cannot be loaded, names stay mangled: a kernel is then matched by its
mangled name only (an `extern "C"` kernel's name is the same both ways)."""

from __future__ import annotations

import ctypes
import ctypes.util
from functools import cache

MAX_NAME = 1 << 16  # longer names (template-heavy kernels reach a few KiB) are kept as they are


@cache
def _runtime() -> tuple[ctypes._CFuncPtr, ctypes._CFuncPtr] | None:
    try:
        cxx = ctypes.CDLL("libstdc++.so.6")
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    fn = cxx.__cxa_demangle
    fn.restype = ctypes.c_void_p
    fn.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
    free = libc.free
    free.argtypes = [ctypes.c_void_p]
    free.restype = None
    return fn, free


def available() -> bool:
    return _runtime() is not None


def demangle(name: str) -> str:
    """The demangled form of an Itanium-mangled name (`_Z…`), or `name` itself (not mangled, too long, or
    no demangler here)."""
    if not name.startswith("_Z") or len(name) > MAX_NAME:
        return name
    found = _runtime()
    if found is None:
        return name
    fn, free = found
    status = ctypes.c_int(0)
    raw = fn(name.encode("ascii", "replace"), None, None, ctypes.byref(status))
    if not raw:
        return name
    try:
        return ctypes.string_at(raw).decode("utf-8", "replace") if status.value == 0 else name
    finally:
        free(raw)
