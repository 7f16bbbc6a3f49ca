"""The watch record: one JSON object a line, append-only, so whatever reached the disk before a hard
power-off reads back. Lines: a header ({"schema": …}), samples (sparkenv/facts/timeseries.Sample), events
({"event": …}: a G-line said during the run), and a closing {"summary": …} when the watcher ended
normally. Each line is one write(2) on an O_APPEND descriptor; fsync(2) runs at most every `fsync_s`
(bounded cost), and always on the header, a FAIL event and the summary."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from typing import Any

from sparkenv.core.datafiles import parse_user_json
from sparkenv.core.errors import SparkenvError, writing
from sparkenv.core.safe_read import UnreadableFile, read_bytes
from sparkenv.facts.timeseries import Sample

SCHEMA = "sparkenv.watch/1"
MAX_LINE = 1 << 20  # a longer line is not one of ours
# A sample line is a few hundred bytes every 2 s: weeks of a run. A bound, so a hostile file cannot
# fill memory.
MAX_RECORD = 512 << 20


class Recorder:
    def __init__(self, path: str, header: dict[str, Any], fsync_s: float) -> None:
        self.path = path
        self.fsync_s = fsync_s
        with writing(path):
            self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
        self.synced = 0.0
        self.fsyncs = 0
        self.append({"schema": SCHEMA, **header}, sync=True)
        _sync_dir(os.path.dirname(os.path.abspath(path)))

    def append(self, obj: dict[str, Any], sync: bool = False) -> None:
        line = json.dumps(obj, separators=(",", ":"), default=str) + "\n"
        now = time.monotonic()
        with writing(self.path):  # a full watch folder ends the watcher with one line (exit 3)
            os.write(self.fd, line.encode())
            if sync or now - self.synced >= self.fsync_s:
                os.fsync(self.fd)
                self.synced = now
                self.fsyncs += 1

    def sample(self, s: Sample) -> None:
        self.append(s.to_json())

    def close(self) -> None:
        if self.fd >= 0:
            os.fsync(self.fd)
            os.close(self.fd)
            self.fd = -1


@dataclass
class Record:
    path: str
    header: dict[str, Any]
    samples: list[Sample] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] | None = None
    torn: int = 0  # lines cut short (a power-off mid-write) or not ours


def read(path: str) -> Record:
    """A record back; SparkenvError (exit 2, one line) when the file is missing or not a watch record."""

    # through safe_read: a FIFO (which an open() waits on for ever), a device or a folder is refused
    lines = read_bytes(path, what="a watch record (.jsonl)", limit=MAX_RECORD).split(b"\n")
    rec: Record | None = None
    torn = 0
    for raw in lines:
        if not raw.strip():
            continue
        try:
            obj = parse_user_json(raw, path, "a watch record line") if len(raw) <= MAX_LINE else None
        except UnreadableFile:  # cut short by a power-off, not ours, or a hostile line (nested too deep)
            obj = None
        if not isinstance(obj, dict):
            torn += 1
            continue
        if rec is None:
            if obj.get("schema") != SCHEMA:
                raise SparkenvError(f"{path}: not a sparkenv watch record (its first line has no {SCHEMA!r})")
            rec = Record(path, obj)
        elif "event" in obj and isinstance(obj["event"], dict):
            rec.events.append(obj["event"])
        elif "summary" in obj and isinstance(obj["summary"], dict):
            rec.summary = obj["summary"]
        elif isinstance(obj.get("t"), (int, float)):
            try:
                rec.samples.append(Sample.from_json(obj))
            except (TypeError, ValueError):
                torn += 1
        else:
            torn += 1
    if rec is None:
        raise SparkenvError(f"{path}: empty, or not a sparkenv watch record")
    rec.torn = torn
    return rec


def _sync_dir(path: str) -> None:
    """The new file's directory entry on disk too, or a power-off can lose the whole file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
