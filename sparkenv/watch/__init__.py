"""`sparkenv gate --watch` and `sparkenv watch`: a small process beside the workload that reads NVML and
/proc every few seconds, judges G3, G4 and G6 over time (rules, Stage.WATCH), and keeps a record that
survives a hard power-off.

- launch.py: starts the watcher from the gate just before it execs the workload (the workload keeps the
  gate's PID, its signals and exit status);
- sampler.py: one reading (NVML in-process, no CUDA context; /proc/meminfo; /proc/pressure/memory);
- record.py: the JSONL record, append-only, fsynced at a bounded rate, read back tolerantly;
- loop.py: the watcher itself; announce.py: one G-line per condition;
- metrics.py: the OpenMetrics/Prometheus textfile; plot.py: the self-contained SVG;
- report.py: `sparkenv watch --report FILE`, what a record shows after the fact.
"""
