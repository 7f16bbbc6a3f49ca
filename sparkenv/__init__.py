"""sparkenv: make NVIDIA DGX Spark (GB10) Python environments known-good before a long run starts."""

__version__ = "0.1.0"
