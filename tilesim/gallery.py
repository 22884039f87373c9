"""``tilesim gallery OUTDIR``: a static HTML site (no server) of every catalog instruction.

One index page, one page per architecture family, one page per instruction with the pictures of
its operands (every wave size) and its explain text. Hovering a cell shows lane, VGPR, bits and
element in an info panel (a few lines of JavaScript reading each cell's tooltip). Opening a page
with ``#selftest`` hovers the first cell programmatically, so a headless browser can check that
hovering works (tests/test_gallery.py does, with Chromium).
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from tilesim.layouts.pictures import svg
from tilesim.matrix.catalog import rows
from tilesim.matrix.explain import explain
from tilesim.matrix.instruction import MatrixInstruction

__all__ = ["build_gallery", "page_name"]

_NAMES = {"A": ("i", "k"), "B": ("k", "j"), "C": ("i", "j"), "D": ("i", "j"), "K": ("i", "k")}

_STYLE = """body{font-family:sans-serif;margin:20px;max-width:1400px}
#info{position:fixed;top:8px;right:8px;background:#ffd;border:1px solid #aa8;padding:6px 10px;min-width:260px;
font-size:13px}
pre{background:#f6f6f6;padding:8px;overflow-x:auto;font-size:12px}
.op{display:inline-block;vertical-align:top;margin:0 16px 16px 0}
a{color:#225}"""

_SCRIPT = """<script>
function tsHover(ev){var t=ev.target.querySelector('title');if(t){document.getElementById('info').textContent=t.textContent;}}
document.querySelectorAll('rect.cell').forEach(function(r){r.addEventListener('mouseover',tsHover);});
if(location.hash==='#selftest'){var c=document.querySelector('rect.cell');
 if(c){c.dispatchEvent(new MouseEvent('mouseover',{bubbles:true}));document.title='hover: '+document.getElementById('info').textContent;}}
</script>"""


def page_name(row: MatrixInstruction) -> str:
    return f"{row.family}_{re.sub(r'[^0-9A-Za-z_.]', '_', row.mnemonic)}.html"


def _page(title: str, body: str) -> str:
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{_STYLE}</style></head><body><div id='info'>hover a cell: lane, VGPR, bits, element</div>"
            f"{body}{_SCRIPT}</body></html>")


def _instruction_page(row: MatrixInstruction) -> str:
    parts = [f"<p><a href='index.html'>all families</a> / <a href='{row.family}.html'>{row.family}</a></p>",
             f"<h1>{html.escape(row.mnemonic)}</h1>"]
    for wave in row.wave_sizes:
        parts.append(f"<h2>wave{wave}</h2>")
        for op in row.operands:
            lay = row.layout(op, wave_size=wave)
            parts.append(f"<div class='op'><h3>{op}</h3>"
                         + svg(lay, f"{op} — {row.mnemonic} ({row.family}, wave{wave})", names=_NAMES[op])
                         + "</div>")
        parts.append(f"<pre>{html.escape(str(explain(row, wave_size=wave)))}</pre>")
    return _page(f"{row.mnemonic} ({row.family})", "".join(parts))


def build_gallery(outdir: str | Path, families: list[str] | None = None) -> list[Path]:
    """Write the gallery; returns the pages written (index first)."""
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    by_family: dict[str, list[MatrixInstruction]] = {}
    for r in rows():
        if families is None or r.family in families:
            by_family.setdefault(r.family, []).append(r)
    written = []
    index = ["<h1>tilesim layout gallery</h1><p>Which lane, VGPR and bits hold which matrix element, for every "
             "instruction in the catalog. Colours are lanes; stripes are replicated copies.</p><ul>"]
    for fam, rs in by_family.items():
        index.append(f"<li><a href='{fam}.html'>{fam}</a> ({len(rs)} instructions; targets {', '.join(rs[0].targets)})</li>")
        items = "".join(f"<li><a href='{page_name(r)}'>{html.escape(r.mnemonic)}</a> — {r.m}x{r.n}x{r.k}"
                        f"{f' x{r.blocks} blocks' if r.blocks > 1 else ''}, {r.types[0]} -> {r.types[3]}</li>" for r in rs)
        p = out / f"{fam}.html"
        p.write_text(_page(f"tilesim: {fam}", f"<p><a href='index.html'>all families</a></p><h1>{fam}</h1><ul>{items}</ul>"))
        written.append(p)
        for r in rs:
            q = out / page_name(r)
            q.write_text(_instruction_page(r))
            written.append(q)
    idx = out / "index.html"
    idx.write_text(_page("tilesim layout gallery", "".join(index) + "</ul>"))
    return [idx, *written]
