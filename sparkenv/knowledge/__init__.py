"""The knowledge files of sparkenv/data, each loaded once into frozen, validated objects.

One module per file (`knowledge/gate.py` for data/gate.toml …), each a frozen dataclass that says the
file's shape and one cached loader named after it (`gate()`), built by `knowledge.schema.build`: a
missing, unknown or mistyped key fails at load with the file and key named (KnowledgeError), names
of distributions are canonicalised (PEP 503) at load, lists are tuples and tables read-only mappings.
Callers read attributes, never raw keys.
"""

from sparkenv.knowledge.schema import KnowledgeError

__all__ = ["KnowledgeError"]
