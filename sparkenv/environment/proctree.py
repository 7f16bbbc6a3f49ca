"""A process and its descendants, read from /proc (one pass over its entries): the processes a workload
started, for per-process readings beside it."""

from __future__ import annotations

import os

MAX_PROCESSES = 65536  # a /proc this large is read no further: the tree found so far is kept


def descendants(root: int) -> set[int]:
    """`root` and every process below it that is alive now (`root` alone where /proc cannot be read)."""
    parent: dict[int, list[int]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return {root}
    for name in names[:MAX_PROCESSES]:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read(1024)
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1 and fields[1].isdigit():
            parent.setdefault(int(fields[1]), []).append(int(name))
    out, todo = {root}, [root]
    while todo:
        for child in parent.get(todo.pop(), ()):
            if child not in out:
                out.add(child)
                todo.append(child)
    return out
