"""What another stage may call of watch/ (tests/test_layers.py holds every other module of it to itself):
`gate --watch` checks the watch's options, then supervises the workload with the watcher beside it."""

from __future__ import annotations

from sparkenv.watch.launch import DEFAULT_FOLDER, check, check_folder, start
from sparkenv.watch.supervise import run as supervise

__all__ = ["DEFAULT_FOLDER", "check", "check_folder", "start", "supervise"]
