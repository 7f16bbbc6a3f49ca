"""data/servers.toml: the inference servers the gate recognises (G6, G10) and how each caps memory."""

from types import MappingProxyType
from typing import Any, NamedTuple

from sparkenv.knowledge.schema import KnowledgeError, build


class Server(NamedTuple):
    name: str
    executables: tuple[str, ...]
    modules: tuple[str, ...]
    cap_args: tuple[str, ...]
    subcommands: tuple[str, ...] = ()  # argv[1] must be one of these, when given
    default_fraction: float | None = None  # its memory share when no cap argument is given


class Servers(NamedTuple):
    reviewed: str
    servers: tuple[Server, ...]
    _toml_keys = MappingProxyType({"servers": "server"})  # field -> the TOML key it reads


def parse(data: dict[str, Any]) -> Servers:
    """A parsed servers.toml as Servers, or one KnowledgeError naming the file and the key."""
    found = build(Servers, data, "servers")
    for i, s in enumerate(found.servers):
        if s.cap_args and s.default_fraction is None:  # what it takes when started without the argument
            raise KnowledgeError(f"sparkenv/data/servers.toml: server[{i}].default_fraction is missing")
    return found
