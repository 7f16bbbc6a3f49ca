#!/bin/sh
# sparkenv inside a built image: its own runtime in /opt/sparkenv/lib, run by the image's python3, so the
# workload's site-packages hold nothing of it (and the gate's probes use that same python3).
# The gate (the image's ENTRYPOINT, in front of every workload) starts without site (-S): the code lines
# of the base's .pth files and its sitecustomize are the workload's business, and cost every start
# (0.06 s on the H200 machine's torch venv); sparkenv/gate/launcher.py makes sys.path as site would,
# without running them.
if [ "$1" = gate ]; then
    exec python3 -I -S -c 'import sys; sys.argv[0] = "sparkenv"; sys.path.insert(0, "/opt/sparkenv/lib"); from sparkenv.gate import launcher; launcher.prepare(); from sparkenv.cli.entry import main; main()' "$@"
fi
exec python3 -I -c 'import sys; sys.argv[0] = "sparkenv"; sys.path.insert(0, "/opt/sparkenv/lib"); from sparkenv.cli.entry import main; main()' "$@"
