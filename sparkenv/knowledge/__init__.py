"""The knowledge files of sparkenv/data, each loaded once into frozen, validated objects.

One module per file (`knowledge/gate.py` for data/gate.toml …), each a frozen record (a typed NamedTuple:
see schema.py for why not a dataclass) that says the file's shape, a `parse(data)` that validates it,
and one cached loader named after the file (`gate()`), built by `knowledge.schema.build`: a
missing, unknown or mistyped key fails at load with the file and key named (KnowledgeError), names
of distributions are canonicalised (PEP 503) at load, lists are tuples and tables read-only mappings.
Callers read attributes, never raw keys.
"""

from sparkenv.knowledge.schema import KnowledgeError

__all__ = ["KnowledgeError"]
