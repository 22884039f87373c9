"""The compile cache serves only entries this user's tilesim wrote (round three).

An entry's header named its key and the SHA-256 of its body: anyone who can write into the cache
folder can compute both (the key is the SHA-256 of the compiler, flags and source, all public), so
an entry planted with a right-looking header was served as clang's output for that source, and
`tilesim compile`/`run --device emulator`/`audit` judged code that clang never produced. Entries now
carry an HMAC under a secret kept in the cache folder (readable by its owner only); a planted entry
is deleted and compiled again, and a secret that others could read or replace turns the cache off.
"""

from __future__ import annotations

import hashlib
import os
import sys

import pytest

from tilesim.hw import offline

KEY = "ab" + "5" * 62
GOOD = "v_wmma_f32_16x16x16_f16 v[0:7], v[8:11], v[12:15], v[0:7]\ns_endpgm\n"
FORGED = "s_endpgm  ; planted\n"


def _plant(path, key: str, body: str) -> None:
    """Write an entry as anyone with write access to the folder can: every header field tilesim's
    v2 format had, computed from public data."""
    path.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(body.encode()).hexdigest()
    path.write_text(f"; tilesim-cache v2 key={key} sha256={digest}\n{body}")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TILESIM_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("TILESIM_NO_CACHE", raising=False)
    return tmp_path / "cache"


def test_a_planted_entry_with_a_right_looking_header_is_not_served(cache):
    entry = cache / KEY[:2] / f"{KEY}.s"
    _plant(entry, KEY, FORGED)
    assert offline._cache_get(KEY) is None
    assert not entry.exists()  # deleted, so the next compile writes a real one


def test_a_planted_entry_copying_the_current_header_layout_is_not_served(cache):
    """The planter overwrites a real entry's body and fixes up every hex digest it can compute."""
    offline._cache_put(KEY, GOOD)
    entry = cache / KEY[:2] / f"{KEY}.s"
    head = entry.read_text().partition("\n")[0]
    fields = dict(f.split("=", 1) for f in head.split() if "=" in f)
    for name in fields:
        if name != "key":
            fields[name] = hashlib.sha256(FORGED.encode()).hexdigest()
    forged_head = " ".join([w for w in head.split() if "=" not in w] + [f"{k}={v}" for k, v in fields.items()])
    entry.write_text(forged_head + "\n" + FORGED)
    assert offline._cache_get(KEY) is None


def test_entries_this_cache_wrote_are_served(cache):
    offline._cache_put(KEY, GOOD)
    assert offline._cache_get(KEY) == GOOD


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
def test_a_secret_others_can_read_turns_the_cache_off(cache):
    offline._cache_put(KEY, GOOD)
    secret = [p for p in cache.iterdir() if p.is_file()]
    assert len(secret) == 1
    os.chmod(secret[0], 0o644)
    with pytest.warns(RuntimeWarning, match="secret"):
        assert offline._cache_get(KEY) is None
