"""The records of each data file (records/gate.py for data/gate.toml …) and its `parse(data)`; loaded
through sparkenv.knowledge, which imports a file's module only when a command first reads that file."""
