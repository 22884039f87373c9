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


# ---------------------------------------------------------------- concurrency and damaged entries
# These call the cache layer directly with synthetic entries (no clang), so they run everywhere.

def _body(key: str, version: int) -> str:
    """A large entry whose every line names its key: a torn or crossed read cannot pass for another."""
    return "".join(f"{key} v{version} line {i:06d} {'x' * 60}\n" for i in range(2000))  # ~150 kB


def _worker(cache: str, wid: int, iters: int, keys: list[str], out) -> None:
    import os
    import random

    os.environ["TILESIM_CACHE"] = cache
    os.environ.pop("TILESIM_NO_CACHE", None)
    rng = random.Random(wid)
    seen = {"hits": 0, "misses": 0, "bad": []}
    for i in range(iters):
        key = rng.choice(keys)
        if rng.random() < 0.5:
            offline._cache_put(key, _body(key, rng.randrange(3)))
        else:
            got = offline._cache_get(key)
            if got is None:
                seen["misses"] += 1
            elif got in {_body(key, v) for v in range(3)}:
                seen["hits"] += 1
            else:
                seen["bad"].append((key, got[:80], len(got)))
    out.put(seen)


def test_concurrent_writers_and_readers_never_see_a_partial_or_wrong_entry(tmp_path):
    import multiprocessing as mp

    ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context("spawn")
    shared = ["aa" + "0" * 62, "aa" + "1" * 62, "b7" + "2" * 62]  # two keys share a folder
    q = ctx.Queue()
    procs = []
    for wid in range(6):
        # workers 0-3 fight over the same keys; 4 and 5 have a key of their own as well
        keys = shared + ([f"c{wid}" + "3" * 62] if wid >= 4 else [])
        procs.append(ctx.Process(target=_worker, args=(str(tmp_path), wid, 100, keys, q)))
    for p in procs:
        p.start()
    results = [q.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    assert all(r["bad"] == [] for r in results), [r["bad"][:2] for r in results]
    assert sum(r["hits"] for r in results) > 50  # readers did read entries while others wrote
    assert not list(tmp_path.rglob(".tmp-*"))  # every temporary file was renamed or removed


@pytest.mark.parametrize("damage", ["truncated", "byte_flipped", "empty", "no_header", "other_key", "not_utf8",
                                    "old_format"])
def test_damaged_entries_are_deleted_and_rebuilt(tmp_path, monkeypatch, damage):
    import hashlib

    monkeypatch.setenv("TILESIM_CACHE", str(tmp_path))
    monkeypatch.delenv("TILESIM_NO_CACHE", raising=False)
    key, other = "ab" + "5" * 62, "ab" + "6" * 62
    body = _body(key, 0)
    offline._cache_put(key, body)
    offline._cache_put(other, _body(other, 0))
    path = tmp_path / "ab" / f"{key}.s"
    assert offline._cache_get(key) == body
    raw = path.read_bytes()
    damaged = {
        "truncated": raw[: len(raw) // 2],
        "byte_flipped": raw[:-100] + bytes([raw[-100] ^ 1]) + raw[-99:],
        "empty": b"",
        "no_header": body.encode(),
        "other_key": (tmp_path / "ab" / f"{other}.s").read_bytes(),  # a whole, valid entry for another key
        "not_utf8": raw[:50] + b"\xff\xfe\x80" + raw[53:],
        "old_format": ("; tilesim-cache sha256=" + hashlib.sha256(body.encode()).hexdigest() + "\n" + body).encode(),
    }[damage]
    path.write_bytes(damaged)
    assert offline._cache_get(key) is None and not path.exists()  # never trusted, removed
    offline._cache_put(key, body)
    assert offline._cache_get(key) == body


def test_unwritable_cache_never_fails_and_leaves_no_temporary_files(tmp_path, monkeypatch):
    monkeypatch.setenv("TILESIM_CACHE", str(tmp_path))
    monkeypatch.delenv("TILESIM_NO_CACHE", raising=False)
    key = "cd" + "7" * 62
    (tmp_path / "cd" / f"{key}.s").mkdir(parents=True)  # a directory where the entry should be
    offline._cache_put(key, "isa")
    assert offline._cache_get(key) is None
    assert [p.name for p in (tmp_path / "cd").iterdir()] == [f"{key}.s"]


def _compile_worker(cache: str, src: str, target: str, out) -> None:
    import os

    os.environ["TILESIM_CACHE"] = cache
    os.environ.pop("TILESIM_NO_CACHE", None)
    out.put((src, target, offline.compile_hip(src, target).isa))


@pytest.mark.compiler
@pytest.mark.slow
def test_concurrent_real_compiles_share_one_cache(tmp_path):
    """Several processes compile through clang into one cache at once: each gets the ISA of its own
    (source, target), and the cache ends with one whole entry per key."""
    import multiprocessing as mp
    import re

    ctx = mp.get_context("spawn")
    other = SRC.replace("1.0f", "2.0f")
    jobs = [(SRC, "gfx1201"), (SRC, "gfx1201"), (other, "gfx1201"), (SRC, "gfx942")]
    q = ctx.Queue()
    procs = [ctx.Process(target=_compile_worker, args=(str(tmp_path), s, t, q)) for s, t in jobs]
    for p in procs:
        p.start()
    results = [q.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    by_key: dict = {}
    for s, t, isa in results:
        by_key.setdefault((s, t), set()).add(isa)
    assert all(len(v) == 1 for v in by_key.values()) and len(by_key) == 3
    # each process got its own source's code: the constant it stores (1.0 or 2.0) is in its ISA
    def stored(isa: str) -> set:
        return set(re.findall(r"mov_b32 v\d+, (\d\.0)\b", isa))

    assert stored(next(iter(by_key[(other, "gfx1201")]))) == {"2.0"}
    assert stored(next(iter(by_key[(SRC, "gfx1201")]))) == {"1.0"}
    assert len(list(tmp_path.rglob("*.s"))) == 3 and not list(tmp_path.rglob(".tmp-*"))


# ---------------------------------------------------------------- symbolic links (issue 19 item 5)
def test_a_symlinked_shard_folder_is_never_read_written_or_deleted_through(tmp_path, monkeypatch):
    cache, outside = tmp_path / "cache", tmp_path / "outside"
    cache.mkdir()
    outside.mkdir()
    monkeypatch.setenv("TILESIM_CACHE", str(cache))
    monkeypatch.delenv("TILESIM_NO_CACHE", raising=False)
    key = "ab" + "8" * 62
    (cache / "ab").symlink_to(outside, target_is_directory=True)
    with pytest.warns(RuntimeWarning, match="symbolic link"):
        offline._cache_put(key, _body(key, 0))
    assert list(outside.iterdir()) == []  # nothing written outside the cache
    # a well-formed entry planted behind the link is neither trusted nor deleted
    planted = outside / f"{key}.s"
    other = tmp_path / "elsewhere"
    monkeypatch.setenv("TILESIM_CACHE", str(other))
    offline._cache_put(key, "planted isa")
    planted.write_bytes((other / "ab" / f"{key}.s").read_bytes())
    monkeypatch.setenv("TILESIM_CACHE", str(cache))
    with pytest.warns(RuntimeWarning, match="symbolic link"):
        assert offline._cache_get(key) is None
    assert planted.exists() and (cache / "ab").is_symlink()


def test_a_symlinked_entry_is_removed_not_followed(tmp_path, monkeypatch):
    monkeypatch.setenv("TILESIM_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("TILESIM_NO_CACHE", raising=False)
    key = "cd" + "9" * 62
    victim = tmp_path / "victim.txt"
    victim.write_text("user data\n")
    (tmp_path / "cache" / "cd").mkdir(parents=True)
    entry = tmp_path / "cache" / "cd" / f"{key}.s"
    entry.symlink_to(victim)
    assert offline._cache_get(key) is None
    assert not entry.is_symlink() and victim.read_text() == "user data\n"  # the link went, its target stayed
    entry.symlink_to(victim)
    offline._cache_put(key, "isa text")
    assert not entry.is_symlink() and victim.read_text() == "user data\n"
    assert offline._cache_get(key) == "isa text"
