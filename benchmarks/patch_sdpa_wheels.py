"""Make the wheels for the SDPA override's GPU proof fit the device machine's 64 MiB carry limit.

The unsloth wheel is 75 MB, almost all of it `studio/` (a web front end no import touches), and
bitsandbytes ships one CUDA library per CUDA release (60 MB). This writes copies without those members
and with RECORD rewritten to match, so `pip install --no-index --no-deps` installs them as usual.

    python benchmarks/patch_sdpa_wheels.py SRC_DIR DEST_DIR

Everything else in SRC_DIR is copied unchanged. Used only to prepare `.whl/` for the device run
(see benchmarks/patch_sdpa_gpu.py); not part of sparkenv.
"""

from __future__ import annotations

import re
import shutil
import sys
import zipfile
from pathlib import Path

# Members dropped per distribution (regex over the path in the wheel).
DROP: dict[str, re.Pattern[str]] = {
    "unsloth": re.compile(r"^(studio|unsloth_cli)/"),
    "bitsandbytes": re.compile(r"^bitsandbytes/libbitsandbytes_(?!cuda130|cpu)\w+\.so$"),
}


def strip(src: Path, dest_dir: Path) -> Path:
    dist = src.name.split("-", 1)[0].lower()
    dest = dest_dir / src.name
    drop = DROP.get(dist)
    if drop is None:
        shutil.copy2(src, dest)
        return dest
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            if drop.search(info.filename):
                continue
            data = zin.read(info)
            if info.filename.endswith(".dist-info/RECORD"):
                kept = [
                    line
                    for line in data.decode().splitlines()
                    if line and not drop.search(line.split(",", 1)[0])
                ]
                data = ("\n".join(kept) + "\n").encode()
            zout.writestr(info, data)
    return dest


def main(argv: list[str]) -> int:
    src_dir, dest_dir = Path(argv[0]), Path(argv[1])
    dest_dir.mkdir(parents=True, exist_ok=True)
    for whl in sorted(src_dir.glob("*.whl")):
        out = strip(whl, dest_dir)
        print(f"{out.name}: {whl.stat().st_size / 1e6:.1f} MB -> {out.stat().st_size / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
