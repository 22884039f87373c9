"""``tilesim gallery OUTDIR``: a static HTML site (no server) of every catalog instruction.

One index page, one page per architecture family, one page per instruction: first its explain text
(the summary a reader wants), then the pictures of its operands for every wave size. Hovering a
cell shows lane, VGPR, bits and element in an info panel. Opening a page with ``#selftest`` hovers
the first cell programmatically, so a headless browser can check that hovering works
(tests/test_gallery.py does, with Chromium).

Size: the pictures are drawn in the browser by one shared script (``gallery.js``, with
``gallery.css``) from each page's compact cell list — six integers per stored element copy —
instead of inlining the SVG markup (about 400 bytes per cell), and an operand whose layout equals
one already on the page (C and D, usually) reuses its data. The whole catalog went from 225 MB to a
few MB. The drawing follows :func:`tilesim.layouts.pictures.svg` (colours, stripes for replicated
copies, tooltips); the Chromium test compares the two tooltip by tooltip.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from tilesim.errors import OutputError
from tilesim.files import refuse_link
from tilesim.layouts.layout import Layout
from tilesim.layouts.pictures import lane_colour, xml_text
from tilesim.matrix.catalog import rows
from tilesim.matrix.explain import LOGICAL_NAMES, explain
from tilesim.matrix.instruction import MatrixInstruction
from tilesim.matrix.sparse import meta_layout, values_layout

__all__ = ["build_gallery", "page_name", "picture_data"]

_NAMES = LOGICAL_NAMES  # index names per operand (SA/SB: the k-block kb), one table with explain

_STYLE = """body{font-family:sans-serif;margin:20px;max-width:1400px}
#info{position:fixed;top:8px;right:8px;background:#ffd;border:1px solid #aa8;padding:6px 10px;min-width:260px;
font-size:13px}
pre{background:#f6f6f6;padding:8px;overflow-x:auto;font-size:12px}
.op{display:inline-block;vertical-align:top;margin:0 16px 16px 0}
a{color:#225}
svg text{font-family:sans-serif}
.ax{font-size:11px;font-style:italic;text-anchor:middle}
.n{font-size:10px;text-anchor:middle}.nr{font-size:10px;text-anchor:end}
.l{text-anchor:middle}
.copy{stroke:#555;stroke-width:.5}
.cell{fill-opacity:0}
.empty{fill:#eee;stroke:#999}
.unsel{fill:#f4f4f4;stroke:#ccc}
"""

# Draws one picture per <div class="pic" data-i=N> from the page's JSON (id "pics"); geometry and
# tooltips as tilesim.layouts.pictures.svg: cell 46 px, padding 40, stripes per replicated copy.
_SCRIPT = r"""(function(){
var NS='http://www.w3.org/2000/svg',C=46,P=40;
function el(tag,attrs,text){var e=document.createElementNS(NS,tag);for(var k in attrs)e.setAttribute(k,attrs[k]);
 if(text!==undefined)e.textContent=text;return e;}
function reg(v,lo,hi,bits){return bits===32?'v'+v:(bits===64?'v['+(v+1)+':'+v+']':'v'+v+'['+lo+':'+hi+']');}
function draw(p,cols){
 var W=P*2+p.cols*C,H=P*2+24+p.rows*C,x0=P,y0=P+24;
 var s=el('svg',{width:W,height:H,viewBox:'0 0 '+W+' '+H});
 s.appendChild(el('title',{},p.title));s.appendChild(el('rect',{width:'100%',height:'100%',fill:'white'}));
 s.appendChild(el('text',{x:P,y:18,'font-size':14,'font-weight':'bold'},p.title));
 s.appendChild(el('text',{'class':'ax',x:x0+p.cols*C/2,y:y0-20},p.names[1]+' \u2192'));
 var ry=y0+p.rows*C/2;s.appendChild(el('text',{'class':'ax',x:x0-24,y:ry,transform:'rotate(-90 '+(x0-24)+' '+ry+')'},
  p.names[0]+' \u2192'));
 for(var c=0;c<p.cols;c++)s.appendChild(el('text',{'class':'n',x:x0+c*C+C/2,y:y0-6},c));
 var cells={},d=p.d;
 for(var i=0;i<d.length;i+=6){var key=d[i]*p.cols+d[i+1];(cells[key]=cells[key]||[]).push(d.slice(i+2,i+6));}
 for(var r=0;r<p.rows;r++){
  s.appendChild(el('text',{'class':'nr',x:x0-6,y:y0+r*C+C/2+3},r));
  for(c=0;c<p.cols;c++){
   var cp=cells[r*p.cols+c]||[],x=x0+c*C,y=y0+r*C;
   if(!cp.length){s.appendChild(el('rect',{'class':p.sel?'unsel':'empty',x:x,y:y,width:C,height:C},undefined));
    if(p.sel)s.lastChild.appendChild(el('title',{},p.names[0]+'='+r+', '+p.names[1]+'='+c+': not selected (no register)'));
    continue;}
   var w=C/cp.length,tips=[],regs={};
   cp.forEach(function(q){regs[reg(q[1],q[2],q[3],p.bits)]=1;});
   var oneReg=Object.keys(regs).length===1;
   cp.forEach(function(q,k){var rn=reg(q[1],q[2],q[3],p.bits);tips.push('lane '+q[0]+', '+rn);
    s.appendChild(el('rect',{'class':'copy',x:(x+k*w).toFixed(1),y:y,width:w.toFixed(1),height:C,fill:cols[q[0]]}));
    // labels never overlap: one stripe gets 'L<lane>', narrow stripes just the number; a register
    // shared by every copy (replication) is written once across the cell
    var fs=cp.length===1?9:(cp.length===2?7:6);
    s.appendChild(el('text',{'class':'l',x:(x+k*w+w/2).toFixed(1),y:y+17,'font-size':fs},(cp.length>2?'':'L')+q[0]));
    if(!oneReg)s.appendChild(el('text',{'class':'l',x:(x+k*w+w/2).toFixed(1),y:y+31,'font-size':fs-1},rn));});
   if(oneReg)s.appendChild(el('text',{'class':'l',x:x+C/2,y:y+33,'font-size':cp.length===1?8:7},Object.keys(regs)[0]));
   var tip=p.names[0]+'='+r+', '+p.names[1]+'='+c+': '+tips.join('; ')+(cp.length>1?' (replicated)':'');
   if(p.notes&&p.notes[r*p.cols+c])tip+='; '+p.notes[r*p.cols+c];
   var cell=el('rect',{'class':'cell','data-row':r,'data-col':c,x:x,y:y,width:C,height:C});
   cell.appendChild(el('title',{},tip));s.appendChild(cell);}}
 return s;}
var pics=JSON.parse(document.getElementById('pics').textContent);
document.querySelectorAll('div.pic').forEach(function(div){var p=pics[+div.getAttribute('data-i')];
 var t=Object.assign({},p.data);t.title=div.getAttribute('data-title');t.names=JSON.parse(div.getAttribute('data-names'));
 div.appendChild(draw(t,p.colours));});
function hover(ev){var t=ev.target.querySelector('title');if(t)document.getElementById('info').textContent=t.textContent;}
document.querySelectorAll('rect.cell').forEach(function(r){r.addEventListener('mouseover',hover);});
if(location.hash==='#selftest'){var c=document.querySelector('rect.cell');
 if(c){c.dispatchEvent(new MouseEvent('mouseover',{bubbles:true}));document.title='hover: '+document.getElementById('info').textContent;}
 // labels that overlap a neighbour on the same line of the same picture (rendered extents)
 var n=0;document.querySelectorAll('div.pic svg').forEach(function(s){var b=[];
  s.querySelectorAll('text.l').forEach(function(t){var r=t.getBBox();b.push([Math.round(r.y),r.x,r.x+r.width]);});
  b.sort(function(p,q){return p[0]-q[0]||p[1]-q[1];});
  for(var i=1;i<b.length;i++)if(b[i][0]===b[i-1][0]&&b[i][1]<b[i-1][2]-0.5)n++;});
 document.body.setAttribute('data-overlaps',n);}
})();
"""


def page_name(row: MatrixInstruction) -> str:
    return f"{row.family}_{re.sub(r'[^0-9A-Za-z_.]', '_', row.mnemonic)}.html"


def picture_data(lay: Layout) -> dict:
    """The compact form gallery.js draws: rows, cols, element bits and (row, col, lane, vgpr, lo, hi) per copy."""
    rec = lay.location_array()
    dims = dict(lay.out_dims)
    flat: list[int] = []
    for b, r, c, v, lane, lo, hi in rec.tolist():
        flat += [b * dims["row"] + r, c, lane, v, lo, hi]
    return {"rows": dims.get("block", 1) * dims["row"], "cols": dims["col"], "bits": lay.elem_bits or 32, "d": flat}


# The six 2:4 selections (kept positions idx0 < idx1 of a group of four k); the example selection of
# row i, group g is _PAIRS[(i + g) % 6], so every pattern and every index code appears.
_PAIRS = ((0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3))


def _selection_data(row: MatrixInstruction, wave: int) -> dict:
    """Sparse A with an example 2:4 selection: which two of every four k are kept, where each kept
    value lands (the compressed-values layout, tilesim.matrix.sparse) and, per kept cell, the index
    bits of its group (the metadata layout: which VGPR bits, and the code ``idx0 | idx1 << 2``).
    Unselected cells hold nothing."""
    vals = values_layout(row, wave).location_array()
    meta = meta_layout(row, wave).location_array()
    where = {(r, c): (lane, v, lo, hi) for _, r, c, v, lane, lo, hi in vals.tolist()}
    byte = {(r, c): (lane, v, lo) for _, r, c, v, lane, lo, _ in meta.tolist()}
    flat: list[int] = []
    notes: dict[int, str] = {}
    for i in range(row.m):
        for g in range(row.k // 4):
            pair = _PAIRS[(i + g) % 6]
            code = pair[0] | pair[1] << 2
            lane_k, vk, lo_k = byte[(i, g // 2)]
            lo_k += 4 * (g % 2)
            for p, pos in enumerate(pair):
                k = 4 * g + pos
                lane, v, lo, hi = where[(i, 2 * g + p)]
                flat += [i, k, lane, v, lo, hi]
                notes[i * row.k + k] = (f"kept as value {p} of group {g} (k {4 * g}..{4 * g + 3}); index lane {lane_k}, "
                                        f"v{vk}[{lo_k}:{lo_k + 3}] = {code:04b}b (idx0 {pair[0]}, idx1 {pair[1]})")
    bits = int(vals[0, 6] - vals[0, 5] + 1)
    return {"rows": row.m, "cols": row.k, "bits": bits, "d": flat, "sel": 1, "notes": notes}


def _page(title: str, body: str, data: list | None = None) -> str:
    pics = ("<script type='application/json' id='pics'>" + json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
            + "</script><script src='gallery.js'></script>") if data else ""
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{xml_text(title)}</title>"
            "<link rel='stylesheet' href='gallery.css'></head><body>"
            f"<div id='info'>hover a cell: lane, VGPR, bits, element</div>{body}{pics}</body></html>")


def _instruction_page(row: MatrixInstruction) -> str:
    parts = [f"<p><a href='index.html'>all families</a> / <a href='{xml_text(row.family)}.html'>{xml_text(row.family)}</a></p>",
             f"<h1>{xml_text(row.mnemonic)}</h1>"]
    data: list[dict] = []
    seen: dict[str, int] = {}

    def pic(d: dict, lanes: int, title: str, names: tuple[str, str]) -> str:
        key = json.dumps(d, sort_keys=True)
        if key not in seen:  # the same layout twice on a page (C and D) is stored once
            seen[key] = len(data)
            data.append({"data": d, "colours": [lane_colour(x, lanes) for x in range(lanes)]})
        return (f"<div class='pic' data-i='{seen[key]}' data-title='{xml_text(title)}' "
                f"data-names='{xml_text(json.dumps(names))}'></div>")

    for wave in row.wave_sizes:
        parts.append(f"<h2>wave{wave}</h2>")
        parts.append(f"<pre>{xml_text(str(explain(row, wave_size=wave)))}</pre>")  # summary first
        for op in row.operands:
            lay = row.layout(op, wave_size=wave)
            lanes = dict(lay.in_dims)["lane"]
            parts.append(f"<div class='op'><h3>{op}</h3>"
                         + pic(picture_data(lay), lanes, f"{op} — {row.mnemonic} ({row.family}, wave{wave})", _NAMES[op])
                         + "</div>")
            if row.sparse and op == "A":
                parts.append("<div class='op'><h3>A, one 2:4 selection</h3><p>Each group of four k keeps two "
                             "(grey: not stored); row i, group g keeps the pair number (i + g) % 6 of (0,1) (0,2) "
                             "(0,3) (1,2) (1,3) (2,3). The kept values are packed in order in the group's field "
                             "(the lower k in the low bits); the index operand K holds 4 bits per group, "
                             "idx0 | idx1 &lt;&lt; 2 — hover a cell for its index bits.</p>"
                             + pic(_selection_data(row, wave), lanes, f"A, 2:4 selection and index bits (wave{wave})",
                                   _NAMES[op]) + "</div>")
    return _page(f"{row.mnemonic} ({row.family})", "".join(parts), data)


def build_gallery(outdir: str | Path, families: list[str] | None = None,
                  progress: Callable[[int, int], None] | None = None) -> list[Path]:
    """Write the gallery; returns the pages written (index first). ``progress(done, total)`` after each page.

    A new ``outdir`` appears whole: the pages are written into a temporary folder beside it, which
    is then renamed. Into an existing folder each page is replaced whole (``os.replace``); nothing
    is written through a symbolic link (``outdir`` itself, or a page name planted as a link).
    """
    out = refuse_link(outdir, "gallery folder")
    if out.exists() and not out.is_dir():
        raise OutputError(f"gallery folder {out} is a file; choose a folder (new or existing) for the pages")
    parent = out.absolute().parent
    parent.mkdir(parents=True, exist_ok=True)
    by_family: dict[str, list[MatrixInstruction]] = {}
    for r in rows():
        if families is None or r.family in families:
            by_family.setdefault(r.family, []).append(r)
    names = ["index.html", *(n for fam, rs in by_family.items() for n in (f"{fam}.html", *map(page_name, rs)))]
    extra = ["gallery.css", "gallery.js"]
    if out.exists():
        for n in names + extra:  # before anything is written: all or nothing
            refuse_link(out / n, "gallery page")
            if (out / n).is_dir():
                raise OutputError(f"gallery page {out / n} is a folder; remove it or choose another folder")
    total = sum(len(rs) for rs in by_family.values())
    done = 0
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=parent))
    try:
        (tmp / "gallery.css").write_text(_STYLE)
        (tmp / "gallery.js").write_text(_SCRIPT)
        index = ["<h1>tilesim layout gallery</h1><p>Which lane, VGPR and bits hold which matrix element, for every "
                 "instruction in the catalog. Colours are lanes; stripes are replicated copies.</p><ul>"]
        for fam, rs in by_family.items():
            index.append(f"<li><a href='{xml_text(fam)}.html'>{xml_text(fam)}</a> ({len(rs)} instructions; targets "
                         f"{', '.join(rs[0].targets)})</li>")
            items = "".join(f"<li><a href='{page_name(r)}'>{xml_text(r.mnemonic)}</a> — {r.m}x{r.n}x{r.k}"
                            f"{f' x{r.blocks} blocks' if r.blocks > 1 else ''}, {r.types[0]} -> {r.types[3]}</li>"
                            for r in rs)
            (tmp / f"{fam}.html").write_text(_page(f"tilesim: {fam}", f"<p><a href='index.html'>all families</a></p>"
                                                                     f"<h1>{xml_text(fam)}</h1><ul>{items}</ul>"))
            for r in rs:
                (tmp / page_name(r)).write_text(_instruction_page(r))
                done += 1
                if progress:
                    progress(done, total)
        (tmp / "index.html").write_text(_page("tilesim layout gallery", "".join(index) + "</ul>"))
        if out.exists():
            for n in extra + names:
                os.replace(tmp / n, out / n)
        else:
            os.chmod(tmp, 0o755)  # mkdtemp makes 0700; a gallery is for reading
            os.rename(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return [out / n for n in names]
