"""Runs INSIDE an aarch64 sparkenv image under emulation (tests/image/test_build_arm64.py mounts it read-only
and runs it with the image's own python3): the facts sparkenv reads on aarch64, each beside what the
arm64 system's own tools say, as one JSON object on stdout. The test compares them; nothing here is
computed on the host.

Standard library plus what the image carries in /opt/sparkenv/lib (sparkenv and packaging)."""

from __future__ import annotations

import glob
import json
import os
import platform
import re
import subprocess
import sys

sys.path.insert(0, "/opt/sparkenv/lib")

from packaging import tags

from sparkenv.cuda import elf
from sparkenv.environment import ldcache, target

SITE = "/usr/local/lib/python3.11/dist-packages"


def machine_of(path: str) -> str:
    info = elf.read_file(path)
    return getattr(info, "machine", f"unreadable: {info}")


def ldconfig_p() -> dict[str, list[str]]:
    """The arm64 glibc's own reading of its cache: `ldconfig -p` lines `soname (flags) => path`."""
    out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, timeout=120).stdout
    found: dict[str, list[str]] = {}
    for m in re.finditer(r"^\s+(\S+) \(([^)]*)\) => (\S+)$", out, re.M):
        found.setdefault(m.group(1), []).append(f"{m.group(3)} ({m.group(2)})")
    return found


def pip_tags() -> list[str]:
    """pip's own list of the tags this interpreter installs (its vendored packaging, its own code)."""
    out = subprocess.run(
        [sys.executable, "-m", "pip", "debug", "--verbose"], capture_output=True, text=True, timeout=300
    ).stdout
    return re.findall(r"^\s+(cp311-cp311-\S+)$", out, re.M)


def cpuinfo() -> dict[str, str]:
    """/proc/cpuinfo's first processor block, as the kernel (or the emulator) shows it here."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError as exc:
        return {"error": exc.strerror or str(exc)}
    block = text.split("\n\n", 1)[0]
    return dict(
        (k.strip(), v.strip()) for k, _, v in (ln.partition(":") for ln in block.splitlines()) if k.strip()
    )


def gate_facts() -> dict:
    """The facts snapshot of the image's own gate (`sparkenv gate --dump-facts`), as it reads them here."""
    path = "/tmp/sparkenv-gate-facts.json"
    subprocess.run(
        ["/usr/local/bin/sparkenv", "gate", "--dump-facts", path], capture_output=True, text=True, timeout=300
    )
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def main() -> None:
    torch_cuda = f"{SITE}/torch/lib/libtorch_cuda.so"
    extensions = sorted(glob.glob(f"{SITE}/**/*.so", recursive=True))
    cache = ldcache.cache("/etc/ld.so.cache")
    torch_info = elf.read_file(torch_cuda)
    print(
        json.dumps(
            {
                "uname": os.uname().machine,
                "host_machine": target.host_machine(),
                "python": os.path.realpath(sys.executable),
                "python_elf": machine_of(os.path.realpath(sys.executable)),
                "extension_elves": {os.path.relpath(p, SITE): machine_of(p) for p in extensions},
                "torch_cuda_needed": list(getattr(torch_info, "needed", ())),
                "libc_ver": list(platform.libc_ver()),
                "confstr": os.confstr("CS_GNU_LIBC_VERSION"),
                "sys_tags": [str(t) for t in tags.sys_tags()],
                "pip_tags": pip_tags(),
                "ldcache": cache,
                "ldconfig_p": ldconfig_p(),
                "libcudart": list(
                    ldcache.resolve("libcudart.so.13", torch_cuda, (), (), target.host_machine())
                ),
                "cpuinfo": cpuinfo(),
                "gate": {k: v for k, v in gate_facts().items() if k in ("host", "torch_static")},
            }
        )
    )


if __name__ == "__main__":
    main()
