"""resolve/filing: the cache files a lock makes after uv's exit, on a thread beside the judgement. What a
lock relies on: a text queued is answered at once by `kept` (a reader never downloads again what is only
waiting to be written), every file is on disk once `wait()` returns, a file that cannot be made costs
nothing but the file (no exception, no temporary left behind), and filing goes on after a wait()."""

from __future__ import annotations

from pathlib import Path

from sparkenv.core import filing
from sparkenv.index import metadata


def test_queued_files_are_kept_at_once_and_on_disk_after_wait(tmp_path: Path):
    paths = [tmp_path / "cache" / f"{n:064x}.native-2" for n in range(40)]
    for n, path in enumerate(paths):
        filing.later(path, f"lib/libx{n}.so\n")
        assert filing.kept(path) == f"lib/libx{n}.so\n"
    filing.wait()
    assert [p.read_text() for p in paths] == [f"lib/libx{n}.so\n" for n in range(40)]
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == sorted(p.name for p in paths)


def test_a_file_that_cannot_be_made_is_given_up_and_filing_goes_on(tmp_path: Path):
    (tmp_path / "blocker").write_text("a file where the cache folder should be")
    bad = tmp_path / "blocker" / "x.metadata"
    good = tmp_path / "ok" / "y.metadata"
    filing.later(bad, "Requires-Dist: a\n")
    filing.later(good, "Requires-Dist: b\n")
    filing.wait()
    assert not bad.exists() and good.read_text() == "Requires-Dist: b\n"
    assert (tmp_path / "blocker").read_text() == "a file where the cache folder should be"
    again = tmp_path / "ok" / "z.metadata"
    filing.later(again, "Requires-Dist: c\n")  # after a wait: a new filing thread
    filing.wait()
    assert again.read_text() == "Requires-Dist: c\n"
    assert sorted(p.name for p in (tmp_path / "ok").iterdir()) == ["y.metadata", "z.metadata"]


def test_the_metadata_cache_answers_what_is_queued_before_it_is_written(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("SPARKENV_CACHE_DIR", str(tmp_path / "sp"))
    sha = "ab" * 32
    assert metadata.cached(sha, ".native-2") is None
    metadata.store(sha, "torch/lib/libtorch.so\n", ".native-2", behind=True)
    assert metadata.cached(sha, ".native-2") == "torch/lib/libtorch.so\n"
    filing.wait()
    assert metadata.STORE.path(f"{sha}.native-2").read_text().endswith("\n" + "torch/lib/libtorch.so\n")
