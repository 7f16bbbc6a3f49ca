"""`sparkenv cache dir|clean`: where sparkenv keeps what it can fetch or build again (index pages, wheel
metadata, the audit's kept answers, sparkenv's runtime wheels for images), and emptying it, as `uv cache
dir|clean` do. The folder is decided in one place (sparkenv/core/cache.py)."""

from __future__ import annotations

import typer

from sparkenv.core import cache

HELP = (
    "Where sparkenv keeps what it can fetch or build again: index pages and wheel metadata (lock, check), "
    "the audit's kept answers, sparkenv's runtime wheels for images (build). The folder is "
    "$SPARKENV_CACHE_DIR, else $XDG_CACHE_HOME/sparkenv, else ~/.cache/sparkenv; nothing in it holds a "
    "credential, and removing it costs only time."
)


def register(app: typer.Typer) -> None:
    group = typer.Typer(help=HELP, no_args_is_help=True, rich_markup_mode=None)
    group.command("dir")(cache_dir)
    group.command("clean")(cache_clean)
    app.add_typer(group, name="cache")


def cache_dir() -> None:
    """Print the cache folder ($SPARKENV_CACHE_DIR, else $XDG_CACHE_HOME/sparkenv, else ~/.cache/sparkenv)."""
    print(cache.root())


def cache_clean() -> None:
    """Empty the cache folder: the next lock, audit and build fetch again what they need.

    Only a folder sparkenv made (it holds sparkenv's CACHEDIR.TAG) or one named sparkenv is emptied: a
    SPARKENV_CACHE_DIR pointed at another folder by mistake is refused (exit 2)."""
    import shutil

    from sparkenv.core.errors import SparkenvError

    root = cache.root()
    if not root.exists():
        print(f"sparkenv cache: {root} does not exist: nothing to remove")
        return
    if not root.is_dir() or not cache.owned(root):
        raise SparkenvError(
            f"{root}: not a cache folder sparkenv made (no sparkenv {cache.TAG} in it): not emptied; "
            "remove it yourself if it is one"
        )
    files = size = 0
    for entry in sorted(root.iterdir()):
        if entry.name == cache.TAG:
            continue
        for path in [entry] if not entry.is_dir() or entry.is_symlink() else [entry, *entry.rglob("*")]:
            try:
                st = path.lstat()
            except OSError:
                continue
            if not path.is_dir() or path.is_symlink():
                files += 1
                size += st.st_size
        try:
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
        except OSError as exc:
            raise SparkenvError(f"{entry}: cannot remove it: {exc.strerror}") from None
    print(f"sparkenv cache: removed {files} file(s), {size / 1e6:.1f} MB, from {root}")
