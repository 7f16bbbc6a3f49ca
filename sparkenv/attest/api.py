"""What another stage may call of attest/ (tests/test_layers.py holds every other module of it to itself):
`gate --attest N` gives the workload's environment the probe and starts the follower that reports."""

from __future__ import annotations

from sparkenv.attest.launch import DEFAULT_FOLDER, environment, run_folder
from sparkenv.attest.run import start_follower

__all__ = ["DEFAULT_FOLDER", "environment", "run_folder", "start_follower"]
