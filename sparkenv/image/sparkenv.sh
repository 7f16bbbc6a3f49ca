#!/bin/sh
# sparkenv inside a built image: its own runtime in /opt/sparkenv/lib, run by the image's python3, so the
# workload's site-packages hold nothing of it (and the gate's probes use that same python3).
exec python3 -I -c 'import sys; sys.argv[0] = "sparkenv"; sys.path.insert(0, "/opt/sparkenv/lib"); from sparkenv.entry import main; main()' "$@"
