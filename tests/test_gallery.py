"""The static layout gallery: one page per family and instruction with the explain text first and
every operand's picture, drawn by one shared script; the whole catalog stays small (size reported
and bounded); and — in a real headless Chromium when one is installed — the page renders, hovering a
cell shows its lane, VGPR, bits and element exactly as the SVG pictures' tooltips say, and no two
cell labels overlap (RDNA3's replicated wave64 A has four copies per cell)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests._golden import records

from tilesim.errors import OutputError
from tilesim.gallery import build_gallery, page_name
from tilesim.layouts.pictures import svg
from tilesim.matrix import lookup
from tilesim.matrix.catalog import rows


def test_pages_for_every_instruction_of_the_built_families(tmp_path):
    pages = build_gallery(tmp_path, families=["rdna3", "sm80"])
    want = [r for r in rows() if r.family in ("rdna3", "sm80")]
    assert {p.name for p in pages} >= {page_name(r) for r in want} | {"index.html", "rdna3.html", "sm80.html"}
    for r in want:
        text = (tmp_path / page_name(r)).read_text()
        assert text.count("class='pic'") == len(r.wave_sizes) * len(r.operands)  # every operand, every wave size
        assert r.mnemonic in text and "gallery.js" in text and "gallery.css" in text
        assert text.index("<pre>") < text.index("class='pic'")  # the explain summary comes first
    index = (tmp_path / "index.html").read_text()
    assert "href='rdna3.html'" in index and "href='sm80.html'" in index
    assert (tmp_path / "gallery.js").stat().st_size > 1000 and (tmp_path / "gallery.css").exists()


def test_picture_data_is_the_layout(tmp_path):
    """Each picture's cell list is the layout's location records (decoded independently of the page)."""
    row = lookup("v_wmma_f32_16x16x16_f16", "gfx1100")
    build_gallery(tmp_path, families=["rdna3"])
    text = (tmp_path / page_name(row)).read_text()
    pics = json.loads(re.search(r"<script type='application/json' id='pics'>(.*?)</script>", text).group(1))
    a = pics[0]["data"]  # wave32 A: 16x16 f16, each element in lane i and i+16, slot k
    cells = {tuple(a["d"][i:i + 6]) for i in range(0, len(a["d"]), 6)}
    assert (a["rows"], a["cols"], a["bits"]) == (16, 16, 16) and len(cells) == 512
    # RDNA3 ISA 7.9: A[i][k] in lanes i and i+16, VGPR k/2, bits 16*(k%2)
    assert cells == {(i, k, lane, k // 2, 16 * (k % 2), 16 * (k % 2) + 15) for i in range(16) for k in range(16)
                     for lane in (i, i + 16)}
    # C and D share one data entry: 4 operands, but only 3 distinct layouts per wave size
    assert text.count("class='pic'") == 8 and len(pics) == 6


def test_sparse_page_shows_the_selection(tmp_path):
    row = next(r for r in rows() if r.family == "cdna3" and r.mnemonic == "v_smfmac_f32_16x16x32_f16")
    build_gallery(tmp_path, families=["cdna3"])
    text = (tmp_path / page_name(row)).read_text()
    assert "one 2:4 selection" in text
    pics = json.loads(re.search(r"id='pics'>(.*?)</script>", text).group(1))
    sel = next(p["data"] for p in pics if p["data"].get("sel"))
    cells = {tuple(sel["d"][i:i + 6]) for i in range(0, len(sel["d"]), 6)}
    # expected from AMD's calculator (the VGPR of each dense k's group) and the ISA (two f16 per
    # group field, the lower kept k in bits 0-15; the index 4 bits per group, idx0 | idx1 << 2)
    pairs = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    a, _ = records(row.spellings, "gfx942", "A", 64)
    kidx, _ = records(row.spellings, "gfx942", "K", 64)
    field = {(i, k): (lane, v) for _, i, k, v, lane, _, _ in a.tolist()}
    nibble = {(i, k): (lane, v, lo) for _, i, k, v, lane, lo, _ in kidx.tolist()}
    want, notes = set(), {}
    for i in range(16):
        for g in range(8):
            pair = pairs[(i + g) % 6]
            for p, pos in enumerate(pair):
                lane, v = field[(i, 4 * g + pos)]
                want.add((i, 4 * g + pos, lane, v, 16 * p, 16 * p + 15))
                kl, kv, klo = nibble[(i, 4 * g)]
                notes[i * 32 + 4 * g + pos] = (kl, kv, klo, pair[0] | pair[1] << 2)
    assert cells == want and len(cells) == 256
    for key, (kl, kv, klo, code) in notes.items():
        assert f"index lane {kl}, v{kv}[{klo}:{klo + 3}] = {code:04b}b" in sel["notes"][str(key)]


def test_the_whole_gallery_is_small(tmp_path):
    pages = build_gallery(tmp_path)
    assert len(pages) == 1 + len({r.family for r in rows()}) + len(rows())
    sizes = [p.stat().st_size for p in tmp_path.iterdir()]
    total = sum(sizes)
    print(f"gallery: {len(pages)} pages, {total / 1e6:.1f} MB, largest file {max(sizes) / 1e6:.2f} MB")
    assert total <= 30e6 and max(sizes) <= 1e6


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def _dom(tmp_path: Path, page: Path) -> str:
    flags = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'chr'}"]
    return subprocess.run([*flags, "--dump-dom", f"file://{page}#selftest"], capture_output=True, text=True,
                          timeout=120).stdout


@pytest.mark.skipif(_chromium() is None, reason="needs a headless Chromium (Debian package chromium)")
def test_renders_in_headless_chromium_and_hover_works(tmp_path):
    build_gallery(tmp_path, families=["rdna3"])
    row = lookup("v_wmma_f32_16x16x16_f16", "gfx1100")
    page = tmp_path / page_name(row)
    dom = _dom(tmp_path, page)
    # the page's own hover handler ran in Chromium: the first cell (i=0, k=0 of RDNA3's A) is in
    # lanes 0 and 16, VGPR 0, bits 0-15
    m = re.search(r"<title>hover: ([^<]*)</title>", dom)
    assert m and m.group(1) == "i=0, k=0: lane 0, v0[0:15]; lane 16, v0[0:15] (replicated)"
    # every tooltip of the drawn A picture equals the SVG picture's (tilesim.layouts.pictures.svg)
    drawn = re.findall(r'<rect class="cell"[^>]*><title>([^<]*)</title>', dom)
    ns = "{http://www.w3.org/2000/svg}"
    ref = [r.find(f"{ns}title").text for r in ET.fromstring(svg(row.layout("A"), names=("i", "k"))).iter(f"{ns}rect")
           if r.get("class") == "cell"]
    assert drawn[:256] == ref
    assert re.search(r'data-overlaps="0"', dom)  # no label overlaps, replicated stripes included
    flags = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp_path / 'chr'}"]
    shot = tmp_path / "gallery.png"
    subprocess.run([*flags, "--window-size=1300,900", f"--screenshot={shot}", f"file://{page}#selftest"],
                   capture_output=True, timeout=120)
    assert shot.read_bytes()[:4] == b"\x89PNG" and shot.stat().st_size > 20_000


# ---------------------------------------------------------------- links and atomic writes (issue 19 item 5)
def _cli(*argv: str) -> subprocess.CompletedProcess:
    import os
    import sys

    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "tilesim.cli", *argv], capture_output=True, text=True, timeout=300,
                          env=env)


def _one_line_error(r: subprocess.CompletedProcess, *words: str) -> None:
    assert r.returncode == 2 and "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("tilesim: error: ") and all(w in r.stderr for w in words), r.stderr


def test_a_planted_index_link_is_refused_and_its_target_untouched(tmp_path):
    out, victim = tmp_path / "site", tmp_path / "victim.txt"
    out.mkdir()
    victim.write_text("precious\n")
    (out / "index.html").symlink_to(victim)
    with pytest.raises(OutputError, match="symbolic link"):
        build_gallery(out, families=["rdna3"])
    assert victim.read_text() == "precious\n" and (out / "index.html").is_symlink()
    assert list(out.iterdir()) == [out / "index.html"]  # all or nothing: no page was written
    _one_line_error(_cli("gallery", str(out), "--family", "rdna3"), "symbolic link", "index.html")
    assert victim.read_text() == "precious\n"


def test_a_linked_outdir_and_a_file_outdir_are_refused(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    with pytest.raises(OutputError, match="symbolic link"):
        build_gallery(tmp_path / "link", families=["rdna3"])
    assert list(real.iterdir()) == []
    (tmp_path / "afile").write_text("x")
    r = _cli("gallery", str(tmp_path / "afile"), "--family", "rdna3")
    _one_line_error(r, "is a file")
    assert "Errno" not in r.stderr


def test_the_gallery_appears_whole_or_not_at_all(tmp_path, monkeypatch):
    import tilesim.gallery as g

    calls = []

    def failing(row):
        calls.append(row)
        if len(calls) == 3:
            raise RuntimeError("disk full, say")
        return "<html>page</html>"

    monkeypatch.setattr(g, "_instruction_page", failing)
    with pytest.raises(RuntimeError):
        build_gallery(tmp_path / "new", families=["rdna3"])
    assert list(tmp_path.iterdir()) == []  # no half gallery, no temporary folder left
    old = tmp_path / "old"
    monkeypatch.undo()
    build_gallery(old, families=["sm80"])
    before = {p.name: p.read_text() for p in old.iterdir()}
    calls.clear()
    monkeypatch.setattr(g, "_instruction_page", failing)
    with pytest.raises(RuntimeError):
        build_gallery(old, families=["sm80"])
    assert {p.name: p.read_text() for p in old.iterdir()} == before  # the old pages stand
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old"]


def test_cli_out_paths_never_write_through_links(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    link = tmp_path / "pic.svg"
    link.symlink_to(victim)
    r = _cli("layout", "--arch", "gfx1201", "--instr", "v_wmma_f32_16x16x16_f16", "--operand", "C",
             "--format", "svg", "--out", str(link))
    _one_line_error(r, "--out", "symbolic link")
    assert victim.read_text() == "precious\n"
    dangling = tmp_path / "gone.svg"
    dangling.symlink_to(tmp_path / "created-through-link.svg")
    _one_line_error(_cli("layout", "--arch", "gfx1201", "--instr", "v_wmma_f32_16x16x16_f16", "--operand", "C",
                         "--format", "svg", "--out", str(dangling)), "symbolic link")
    assert not (tmp_path / "created-through-link.svg").exists()
    ok = tmp_path / "real.svg"
    r = _cli("layout", "--arch", "gfx1201", "--instr", "v_wmma_f32_16x16x16_f16", "--operand", "C",
             "--format", "svg", "--out", str(ok))
    assert r.returncode == 0 and ok.read_text().startswith("<svg") and not ok.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gone.svg", "pic.svg", "real.svg", "victim.txt"]


def test_write_output_is_whole_and_refuses_folders_links_and_missing_parents(tmp_path):
    from tilesim.files import write_output

    target = tmp_path / "a.svg"
    write_output(target, "<svg/>")
    write_output(target, b"<svg>2</svg>")
    assert target.read_text() == "<svg>2</svg>" and sorted(p.name for p in tmp_path.iterdir()) == ["a.svg"]
    (tmp_path / "d").mkdir()
    with pytest.raises(OutputError, match="is a folder"):
        write_output(tmp_path / "d", "x")
    with pytest.raises(OutputError, match="does not exist"):
        write_output(tmp_path / "nope" / "a.svg", "x")
    (tmp_path / "l.svg").symlink_to(target)
    with pytest.raises(OutputError, match="symbolic link"):
        write_output(tmp_path / "l.svg", "x")
    assert target.read_text() == "<svg>2</svg>"
