"""data/hosts.toml [[dgx_os]]: every DGX OS release has its date and a public source, a field no source
states is named unverified, and a release past the newest row is newer_than_known's (the one function
every stage asks), never judged as the newest one."""

from __future__ import annotations

import re

import pytest

from sparkenv.knowledge import hosts
from sparkenv.knowledge.known import newer_than_known, newest_dgx_os

DATE = re.compile(r"^\d{4}-\d{2}(-\d{2})?$")
RELEASES = {r.version: r for r in hosts().dgx_os}


def test_the_releases_owners_run_are_recorded() -> None:
    assert {"7.5.0", "7.6.0"} <= set(RELEASES)


@pytest.mark.parametrize("version", sorted(RELEASES))
def test_every_release_has_a_date_and_a_public_source(version: str) -> None:
    row = RELEASES[version]
    assert DATE.match(row.date), row.date
    assert row.source.startswith("https://"), row.source
    assert not row.kernel_source or row.kernel_source.startswith("https://")
    assert set(row.unverified) <= {"kernel", "driver"}, row.unverified
    assert row.kernel and row.driver


def test_the_7_6_0_update_ships_kernel_7_0_0_1019_and_driver_580_178_04() -> None:
    row = RELEASES["7.6.0"]
    assert (row.kernel, row.driver) == ("7.0.0-1019-nvidia", "580.178.04")
    assert row.unverified == ()


def test_a_dgx_os_release_past_the_newest_row_is_unknown() -> None:
    newest = newest_dgx_os()
    major, minor, *_ = (int(p) for p in newest.split("."))
    assert newer_than_known("dgx_os", newest) is None
    assert newer_than_known("dgx_os", "7.5.0") is None
    unknown = newer_than_known("dgx_os", f"{major}.{minor + 1}.0")
    assert unknown is not None and unknown.newest == newest
    assert unknown.reviewed == hosts().reviewed and "hosts.toml" in unknown.refresh
    assert "kernel and driver it ships" in unknown.summary()
    assert newer_than_known("dgx_os", "DGX OS") is None  # not a version: the caller says so
