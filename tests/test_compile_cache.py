"""The compile cache: content-addressed, atomic, and corrupted entries are rebuilt, never trusted."""

from __future__ import annotations

import pytest

from tilesim.hw import offline

SRC = 'extern "C" __attribute__((global)) void k(float* x) { x[__builtin_amdgcn_workitem_id_x()] = 1.0f; }'


@pytest.mark.compiler
def test_hit_miss_and_corruption(tmp_path, monkeypatch):
    monkeypatch.setenv("TILESIM_CACHE", str(tmp_path))
    monkeypatch.delenv("TILESIM_NO_CACHE", raising=False)
    first = offline.compile_hip(SRC, "gfx1201")
    entries = list(tmp_path.rglob("*.s"))
    assert len(entries) == 1 and "global_store" in first.isa
    again = offline.compile_hip(SRC, "gfx1201")
    assert again.isa == first.isa
    entries[0].write_text(entries[0].read_text()[:-200])  # truncated entry
    rebuilt = offline.compile_hip(SRC, "gfx1201")
    assert rebuilt.isa == first.isa and entries[0].read_text().endswith(first.isa[-100:])
    offline.compile_hip(SRC, "gfx942")  # another target is another key
    assert len(list(tmp_path.rglob("*.s"))) == 2


@pytest.mark.compiler
def test_disabled_cache_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("TILESIM_CACHE", str(tmp_path))
    monkeypatch.setenv("TILESIM_NO_CACHE", "1")
    offline.compile_hip(SRC, "gfx1201")
    assert not list(tmp_path.rglob("*.s"))
