"""Stage.ATTEST: which kernels the workload actually ran (`sparkenv attest`, `gate --attest N`).

launch.py gives the workload's environment the probe (inject/sitecustomize.py, first on PYTHONPATH) and a
fresh private CUDA JIT cache; record.py reads the probe's records back (a cut record too) into
facts/attest.py's facts, with the loaded libraries' GPU code where the JIT cache filled; run.py judges
them through the registry (rules/attest_g2.py, rules/attest_g7.py) and runs the workload for
`sparkenv attest -- CMD`."""
