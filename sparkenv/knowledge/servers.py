"""data/servers.toml: the inference servers the gate recognises (G6, G10) and how each caps memory."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from sparkenv import datafiles
from sparkenv.knowledge.schema import KnowledgeError, build, key


@dataclass(frozen=True)
class Server:
    name: str
    executables: tuple[str, ...]
    modules: tuple[str, ...]
    cap_args: tuple[str, ...]
    subcommands: tuple[str, ...] = ()  # argv[1] must be one of these, when given
    default_fraction: float | None = None  # its memory share when no cap argument is given


@dataclass(frozen=True)
class Servers:
    reviewed: str
    servers: tuple[Server, ...] = key("server")


@functools.cache
def servers() -> Servers:
    found = build(Servers, datafiles.load("servers"), "servers")
    for i, s in enumerate(found.servers):
        if s.cap_args and s.default_fraction is None:  # what it takes when started without the argument
            raise KnowledgeError(f"sparkenv/data/servers.toml: server[{i}].default_fraction is missing")
    return found
