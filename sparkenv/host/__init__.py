"""`sparkenv host`: the Spark itself, outside any container — what stops a container from starting or a
run from being fast. Gathers facts (probes.py: files through sparkenv/environment readers, the Docker
Engine API through docker_probe.py, NVML and the driver through the gate's readers), writes or replays
the snapshot in the gate's schema, and calls the registry (Stage.HOST); it decides nothing itself."""
