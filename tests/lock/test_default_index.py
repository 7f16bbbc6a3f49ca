"""sparkenv's own index reads go where the installers' default points, asked of them: never a host of
sparkenv's choosing (a machine whose installers use a mirror is never sent elsewhere)."""

from __future__ import annotations

import subprocess
import sys

from sparkenv.index import default_index


def test_the_default_index_is_the_one_pip_and_uv_state():
    pip_says = default_index._pip_default()
    uv_says = default_index._uv_default()
    assert uv_says is not None and uv_says.startswith("https://") and uv_says.endswith("/")
    # pip and uv agree on the public default; what sparkenv reads is theirs
    assert pip_says in (None, uv_says)
    assert default_index.installers_default() == (pip_says or uv_says)
    assert default_index.is_installers_default(None)
    assert default_index.is_installers_default(uv_says.rstrip("/"))
    assert not default_index.is_installers_default("http://127.0.0.1:1/simple")


def test_without_pip_the_default_comes_from_uv():
    # pip made unimportable in a real interpreter (as under `uv tool install`, which installs no pip): the
    # default is what uv's own help states
    code = (
        "import sys; sys.modules['pip'] = None\n"
        "from sparkenv.index import default_index as d\n"
        "assert d._pip_default() is None\n"
        "print(d.installers_default())\n"
    )
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == default_index._uv_default()
