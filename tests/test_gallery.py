"""The static layout gallery: one page per family and instruction with every operand's picture,
and — in a real headless Chromium when one is installed — the page renders and hovering a cell
shows its lane, VGPR, bits and element."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tilesim.gallery import build_gallery, page_name
from tilesim.matrix.catalog import rows


def test_pages_for_every_instruction_of_the_built_families(tmp_path):
    pages = build_gallery(tmp_path, families=["rdna3", "sm80"])
    want = [r for r in rows() if r.family in ("rdna3", "sm80")]
    assert {p.name for p in pages} >= {page_name(r) for r in want} | {"index.html", "rdna3.html", "sm80.html"}
    for r in want:
        text = (tmp_path / page_name(r)).read_text()
        assert text.count("<svg") == len(r.wave_sizes) * len(r.operands)  # every operand, every wave size
        assert r.mnemonic in text and "class=\"cell\"" in text
    index = (tmp_path / "index.html").read_text()
    assert "href='rdna3.html'" in index and "href='sm80.html'" in index


@pytest.mark.slow
def test_the_whole_catalog_has_pictures(tmp_path):
    pages = build_gallery(tmp_path)
    assert len(pages) == 1 + len({r.family for r in rows()}) + len(rows())


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.skipif(_chromium() is None, reason="needs a headless Chromium (Debian package chromium)")
def test_renders_in_headless_chromium_and_hover_works(tmp_path):
    build_gallery(tmp_path, families=["rdna3"])
    page = tmp_path / page_name(next(r for r in rows() if r.family == "rdna3"))
    flags = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'chr'}"]
    dom = subprocess.run([*flags, "--dump-dom", f"file://{page}#selftest"], capture_output=True, text=True,
                         timeout=120).stdout
    # the page's own hover handler ran in Chromium: the first cell (i=0, k=0 of RDNA3's A) is in
    # lanes 0 and 16, VGPR 0, bits 0-15
    m = re.search(r"<title>hover: ([^<]*)</title>", dom)
    assert m and m.group(1) == "i=0, k=0: lane 0, v0[0:15]; lane 16, v0[0:15] (replicated)"
    shot = tmp_path / "gallery.png"
    subprocess.run([*flags, "--window-size=1300,900", f"--screenshot={shot}", f"file://{page}#selftest"],
                   capture_output=True, timeout=120)
    assert shot.read_bytes()[:4] == b"\x89PNG" and shot.stat().st_size > 20_000
