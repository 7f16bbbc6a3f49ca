"""What the public-index lock tests share (tests/lock/test_lock_pypi.py, test_lock_classes_pypi.py): the date
the index is held at, the `lock` fixture with caches kept per module, and findings by (id, subject)."""

from __future__ import annotations

import pytest

AS_OF = "2026-11-30T00:00:00Z"  # --exclude-newer: the verdicts on real packages stay put


def by(r) -> dict[tuple[str, str], dict]:  # type: ignore[no-untyped-def]
    return {(f["id"], f["subject"]): f for f in r.json()["findings"]}


@pytest.fixture(scope="module")
def caches(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("pypi-caches")
    return {"UV_CACHE_DIR": str(root / "uv"), "SPARKENV_CACHE_DIR": str(root / "sparkenv")}


@pytest.fixture
def lock(run, caches, tmp_path):
    """`sparkenv lock TEXT --exclude-newer AS_OF --json`, with uv's and sparkenv's caches kept per module."""

    def _lock(text: str, *args: str):
        req = tmp_path / "requirements.txt"
        req.write_text(text)
        out = tmp_path / "out"
        return run(
            "lock", str(req), "--output-dir", str(out), "--exclude-newer", AS_OF, "--json", *args, env=caches
        )

    return _lock
