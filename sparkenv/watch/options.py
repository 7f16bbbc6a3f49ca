"""The watcher's options, as `sparkenv watch` spells them (--dir, --interval, --policy); the gate spells
the same options --watch-dir, --watch-interval and --watch-policy (gate/options.py `in_the_gate`), with the
same help and variable. Declarations only: the gate's start imports this module and nothing else of the
watcher without --watch."""

from __future__ import annotations

from sparkenv.core.optionspec import Option

WATCHER_DIR = Option(
    "dir",
    ("--dir",),
    metavar="DIR",
    envvar="SPARKENV_WATCH_DIR",
    help="Where the record, the metrics textfile and the plot go (default ./sparkenv-watch). Also "
    "$SPARKENV_WATCH_DIR.",
)
WATCHER_INTERVAL = Option(
    "interval", ("--interval",), float, metavar="SECONDS", help="Seconds between readings (default 2)."
)
WATCHER_POLICY = Option(
    "policy",
    ("--policy",),
    metavar="report|stop",
    help="report (default): say what is seen. stop: send the workload SIGTERM, saying why, before "
    "predicted memory exhaustion or near the temperature shutdown point.",
)
