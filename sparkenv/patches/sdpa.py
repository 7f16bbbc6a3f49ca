"""The G2 SDPA override: PyTorch's scaled_dot_product_attention as the attention of Unsloth and transformers.

One flag is not enough: every module that star-imports `unsloth.models._utils` holds its own copy of
`HAS_FLASH_ATTENTION`, and the attention dispatch reads its copy (docs/patch.md says which). So a finder
at the front of `sys.meta_path` patches each `unsloth*` module as it is imported (the flash-attention
flags, and in "sdpa" mode `HAS_XFORMERS`, set to False), and transformers' `is_flash_attn_{2,3,4}_available`
in every module of transformers, trl, peft and Unsloth that holds one.

Activation: `force_sdpa()`, or `sparkenv-sdpa.pth` (`sparkenv patch sdpa --install`) running `_boot()`,
which only puts the finder in place: nothing heavy is imported until an `unsloth*` module is.
`SPARKENV_SDPA=0` (off/false/no) switches the .pth off, `SPARKENV_SDPA=xformers` keeps xformers.
`status()` tells a gate, importing nothing, whether the override is active.

Standard library only, and it must stay so: `patch sdpa --install` copies this file into the target's
site-packages as `_sparkenv_sdpa.py`. Copies loaded in one process share one finder, found in
`sys.meta_path` by its `_sparkenv_sdpa` marker, which holds the state.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the .pth imports this at every start, typing costs
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType
    from typing import Any

HOOK_VERSION = 1
ENV = "SPARKENV_SDPA"
MODES = ("sdpa", "xformers")  # what stays allowed besides SDPA: nothing, or xformers
_OFF = ("0", "off", "false", "no", "none", "disable", "disabled")

FLASH_FLAGS = ("HAS_FLASH_ATTENTION", "HAS_FLASH_ATTENTION_SOFTCAPPING")
XFORMERS_FLAGS = ("HAS_XFORMERS",)
TRANSFORMERS_HELPERS = ("is_flash_attn_2_available", "is_flash_attn_3_available", "is_flash_attn_4_available")

# Modules whose flags are set: Unsloth, unsloth_zoo and the modules Unsloth compiles (unsloth_compiled_*).
UNSLOTH_PREFIX = "unsloth"
# Modules whose copies of the transformers helpers are replaced (once an Unsloth module is loaded).
HELPER_PREFIXES = ("transformers", "trl", "peft", "unsloth")
_WATCHED = tuple(dict.fromkeys((UNSLOTH_PREFIX, *HELPER_PREFIXES)))


def _in(name: str, prefix: str) -> bool:
    """`name` is the package `prefix`, one of its submodules, or (for unsloth) a sibling like unsloth_zoo."""
    if prefix == UNSLOTH_PREFIX:
        return name.startswith(prefix)
    return name == prefix or name.startswith(prefix + ".")


def _flash_attn_unavailable(*args: object, **kwargs: object) -> bool:
    """Stands in for transformers' is_flash_attn_*_available while the SDPA override is active."""
    return False


_flash_attn_unavailable._sparkenv_sdpa = HOOK_VERSION  # type: ignore[attr-defined]
_flash_attn_unavailable.cache_clear = lambda: None  # type: ignore[attr-defined]  # lru_cache's API


def _debug(msg: str) -> None:
    if os.environ.get("SPARKENV_DEBUG"):
        sys.stderr.write(f"sparkenv-sdpa: {msg}\n")


class _PatchingLoader:
    """Wraps a module's real loader only while the module executes, then patches the module.

    Everything but exec_module is delegated; afterwards `__loader__` and `__spec__.loader` point at the
    real loader again, so inspect, importlib.resources and isinstance checks see what they always see.
    """

    def __init__(self, loader: Any, after: Callable[[ModuleType], None]) -> None:
        self._loader = loader
        self._after = after

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)

    def create_module(self, spec: Any) -> Any:
        create = getattr(self._loader, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module: ModuleType) -> None:
        try:
            self._loader.exec_module(module)
        finally:
            if getattr(module, "__loader__", None) is self:
                module.__loader__ = self._loader
            spec = getattr(module, "__spec__", None)
            if spec is not None and spec.loader is self:
                spec.loader = self._loader
        self._after(module)


class _SdpaFinder:
    """The shared state and the import hook. Never finds a module itself: it asks the finders behind it
    and wraps the loader of the modules it watches."""

    _sparkenv_sdpa = HOOK_VERSION  # the marker other copies of this module look for

    def __init__(self, mode: str, source: str, origin: str) -> None:
        self.mode = mode
        self.source = source  # "pth" or "force_sdpa"
        self.origin = origin  # the file of the module that installed it
        self.armed = False  # an Unsloth module was seen: patch everything watched
        self.changes: list[tuple[str, str, Any]] = []  # (module, attribute, old value), for restore()
        self.errors: list[str] = []
        self._busy: set[str] = set()

    # -- the import hook ------------------------------------------------------------------------------
    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if not name.startswith(_WATCHED) or name in self._busy:
            return None
        if not self.armed and not _in(name, UNSLOTH_PREFIX):
            return None  # transformers & co. are left alone until Unsloth is imported
        if not any(_in(name, p) for p in _WATCHED):
            return None  # e.g. "transformers_stream_generator", "peftlike"
        self._busy.add(name)
        try:
            spec = None
            for finder in list(sys.meta_path):
                if getattr(finder, "_sparkenv_sdpa", None) is not None:
                    continue
                find = getattr(finder, "find_spec", None)
                if find is None:
                    continue
                spec = find(name, path, target)
                if spec is not None:
                    break
        finally:
            self._busy.discard(name)
        loader = getattr(spec, "loader", None)
        if spec is None or loader is None or not hasattr(loader, "exec_module"):
            return spec
        spec.loader = _PatchingLoader(loader, self._loaded)
        return spec

    def _loaded(self, module: ModuleType) -> None:
        try:
            if _in(module.__name__, UNSLOTH_PREFIX) and not self.armed:
                self.arm()
            else:
                self._patch_module(module.__name__, module)
        except Exception as exc:  # never let the override break an import
            self.errors.append(f"{module.__name__}: {exc.__class__.__name__}: {exc}")
            _debug(f"patching {module.__name__} failed: {exc!r}")

    # -- patching -------------------------------------------------------------------------------------
    def arm(self) -> None:
        """Unsloth is (being) imported: patch every watched module loaded so far, and all later ones."""
        self.armed = True
        for name, module in list(sys.modules.items()):
            if module is not None and name.startswith(_WATCHED):
                self._patch_module(name, module)

    def _patch_module(self, name: str, module: ModuleType) -> None:
        try:
            namespace = vars(module)  # never getattr: transformers' lazy modules would import on access
        except TypeError:
            return
        if _in(name, UNSLOTH_PREFIX):
            flags = FLASH_FLAGS + (XFORMERS_FLAGS if self.mode == "sdpa" else ())
            for flag in flags:
                if namespace.get(flag) is True:
                    self._set(name, module, flag, False)
        if any(_in(name, p) for p in HELPER_PREFIXES):
            for helper in TRANSFORMERS_HELPERS:
                value = namespace.get(helper)
                if callable(value) and getattr(value, "_sparkenv_sdpa", None) is None:
                    self._set(name, module, helper, _flash_attn_unavailable)

    def _set(self, name: str, module: ModuleType, attr: str, value: Any) -> None:
        self.changes.append((name, attr, vars(module)[attr]))
        setattr(module, attr, value)

    def restore(self) -> int:
        """Put every changed attribute back and take the hook out; returns how many were restored."""
        n = 0
        for name, attr, old in reversed(self.changes):
            module = sys.modules.get(name)
            if module is not None:
                setattr(module, attr, old)
                n += 1
        self.changes.clear()
        self.armed = False
        sys.meta_path[:] = [f for f in sys.meta_path if f is not self]
        return n


def _finder() -> _SdpaFinder | None:
    """The installed hook, whichever copy of this module installed it."""
    return next((f for f in sys.meta_path if getattr(f, "_sparkenv_sdpa", None) is not None), None)


def _install(mode: str, source: str) -> _SdpaFinder:
    finder = _finder()
    if finder is None:
        finder = _SdpaFinder(mode, source, __file__)
        sys.meta_path.insert(0, finder)
    elif mode == "sdpa" and finder.mode != "sdpa":
        finder.mode = "sdpa"  # the stricter wish wins
    return finder


def _unsloth_installed() -> bool:
    if any(_in(n, UNSLOTH_PREFIX) for n in list(sys.modules)):
        return True
    import importlib.util

    return (
        importlib.util.find_spec("unsloth") is not None or importlib.util.find_spec("unsloth_zoo") is not None
    )


def _describe(change: tuple[str, str, Any]) -> str:
    name, attr, old = change
    old_text = "the transformers helper" if callable(old) else repr(old)
    new_text = "always False" if callable(old) else "False"
    return f"{name}.{attr}: {old_text} -> {new_text}"


def force_sdpa(mode: str = "sdpa") -> dict[str, Any]:
    """Make SDPA Unsloth's and transformers' attention; call it before or after `import unsloth`.

    mode "sdpa" (default) also turns xformers off; "xformers" keeps it. Returns what was done:
    `{"active": bool, "message": str, "changes": [str, …], …}` (the keys of `status()`). Where Unsloth
    is not installed, nothing is patched and `message` says so. Honours no environment variable: an
    explicit call is an explicit wish (SPARKENV_SDPA only switches the .pth activation).
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    if not _unsloth_installed():
        result = status()
        result["message"] = "Unsloth is not installed: nothing to patch (transformers left as it is)"
        return result
    finder = _install(mode, "force_sdpa")
    before = len(finder.changes)
    loaded = any(_in(n, UNSLOTH_PREFIX) for n in list(sys.modules))
    finder.arm()  # before Unsloth is imported too: it is installed, so patch transformers now
    result = status()
    new = [_describe(c) for c in finder.changes[before:]]
    if loaded:
        result["message"] = (
            f"SDPA override active: {len(new)} attribute(s) changed now; later imports patched too"
        )
    else:
        result["message"] = (
            "SDPA override active: Unsloth is not imported yet; its modules are patched as they load"
        )
    result["changed_now"] = new
    return result


def restore() -> int:
    """Undo force_sdpa() (or the .pth activation) in this process; returns how many were restored."""
    finder = _finder()
    return finder.restore() if finder is not None else 0


def mode_from_env(value: str | None) -> str | None:
    """The one reading of SPARKENV_SDPA, for the .pth at start-up and for every stage that judges G2:
    "sdpa" or "xformers" (the mode asked for; unset means the default, "sdpa"), or None when the value
    switches the override off (0, off, false, no, none, disable, disabled; any case, spaces ignored)."""
    word = (value if value is not None else "1").strip().lower()
    if word in _OFF:
        return None
    return "xformers" if word == "xformers" else "sdpa"


def _env_setting() -> str | None:
    """The mode SPARKENV_SDPA asks for in this process; None when it switches the override off."""
    return mode_from_env(os.environ.get(ENV))


def _boot() -> None:
    """Called by the .pth file at interpreter start: put the lazy hook in place unless switched off."""
    mode = _env_setting()
    if mode is None:
        return
    _install(mode, "pth")


def status() -> dict[str, Any]:
    """Where the override stands in this process; imports nothing (safe before or without torch).

    Keys: installed (sparkenv-sdpa.pth in a site folder of this interpreter), pth (its path), armed
    (an Unsloth module was seen), active (hook in place and no Unsloth module still holding a True
    flash-attn flag, and where Unsloth is loaded, its dispatch picks SDPA), installed_by ("pth",
    "force_sdpa" or None), mode, env
    (SPARKENV_SDPA's value or None), disabled_by_env, unsloth_loaded, dispatch (what Unsloth's
    select_attention_backend() picks now, None when not loaded), leaks (["module.FLAG", …] still True),
    transformers_helpers ({"module.helper": "patched" | "original"}), changes (what was changed, in
    order), errors, hook_version, hook_file, message.
    """
    finder = _finder()
    env = os.environ.get(ENV)
    modules = {n: m for n, m in list(sys.modules.items()) if m is not None}
    unsloth_mods = {n: m for n, m in modules.items() if _in(n, UNSLOTH_PREFIX)}
    mode = finder.mode if finder is not None else None
    leak_flags = FLASH_FLAGS + (XFORMERS_FLAGS if mode in (None, "sdpa") else ())
    leaks = [
        f"{n}.{flag}"
        for n, m in sorted(unsloth_mods.items())
        for flag in leak_flags
        if _vars(m).get(flag) is True
    ]
    dispatch = _dispatch(unsloth_mods.get("unsloth.utils.attention_dispatch"))
    helpers = _helpers(modules)
    helpers_ok = not unsloth_mods or all(v == "patched" for v in helpers.values())
    dispatch_ok = dispatch is None or dispatch == "sdpa" or (mode == "xformers" and dispatch == "xformers")
    active = finder is not None and not leaks and dispatch_ok and helpers_ok
    message = _message(finder, env, len(unsloth_mods), active, leaks, dispatch)
    pth = _installed_pth()
    return {
        "active": bool(active),
        "installed": pth is not None,
        "pth": pth,
        **_finder_state(finder),
        "mode": mode,
        "env": env,
        "disabled_by_env": _env_setting() is None,
        "unsloth_loaded": bool(unsloth_mods),
        "dispatch": dispatch,
        "leaks": leaks,
        "transformers_helpers": helpers,
        "message": message,
    }


def _finder_state(finder: Any) -> dict[str, Any]:
    """What the hook (None when it is not in place) did: armed, by whom, its changes and errors."""
    return {
        "armed": bool(finder and finder.armed),
        "installed_by": finder.source if finder else None,
        "changes": [_describe(c) for c in finder.changes] if finder else [],
        "errors": list(finder.errors) if finder else [],
        "hook_version": getattr(finder, "_sparkenv_sdpa", None),
        "hook_file": finder.origin if finder else None,
    }


def _dispatch(dispatch_mod: Any) -> str | None:
    """What Unsloth's select_attention_backend() picks now; None when it is not loaded."""
    select = _vars(dispatch_mod).get("select_attention_backend") if dispatch_mod else None
    if not callable(select):
        return None
    try:
        return str(select())
    except Exception as exc:
        return f"error: {exc.__class__.__name__}: {exc}"


def _helpers(modules: dict[str, Any]) -> dict[str, str]:
    """transformers' is_flash_attn_2_available helpers: patched or original."""
    helpers: dict[str, str] = {}
    for name in ("transformers.utils.import_utils", "transformers.utils"):
        fn = _vars(modules.get(name)).get("is_flash_attn_2_available")
        if fn is not None:
            patched = getattr(fn, "_sparkenv_sdpa", None) is not None
            helpers[f"{name}.is_flash_attn_2_available"] = "patched" if patched else "original"
    return helpers


def _message(
    finder: Any, env: str | None, loaded: int, active: bool, leaks: list[str], dispatch: str | None
) -> str:
    if finder is None:
        if _env_setting() is None:
            return f"SDPA override off: {ENV}={env} switched the .pth activation off"
        return "SDPA override not active in this process (no .pth activation, force_sdpa() not called)"
    if not loaded:
        return "SDPA override waiting: no Unsloth module imported yet; they are patched as they load"
    if active:
        return f"SDPA override active: {loaded} Unsloth module(s) loaded, dispatch picks {dispatch}"
    return "SDPA override incomplete: " + ", ".join(leaks or [f"dispatch picks {dispatch}"])


def _installed_pth(name: str = "sparkenv-sdpa.pth") -> str | None:
    """The .pth activation file in one of this interpreter's site folders (a file check per folder)."""
    import site

    dirs = [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
    if hasattr(site, "getsitepackages"):  # some embedded or virtualenv-patched site modules lack it
        dirs += [*site.getsitepackages(), site.getusersitepackages()]
    for folder in dict.fromkeys(dirs):
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            return path
    return None


def _vars(module: Any) -> dict[str, Any]:
    if module is None:
        return {}
    try:
        return vars(module)
    except TypeError:
        return {}
