"""No code from data (issue 19 item 1): a program's JSON cannot put text into generated source.

0.5.0 wrote a ``binop``'s op string and a ``shuffle``'s ``src_lane`` entries verbatim into the
kernel: op ``'+ 0); asm volatile("s_trap 2"); s5 = (s1 +'`` put ``s_trap 2`` into the compiled
ISA, and op ``"*\\n#include \\"/some/file\\""`` read a host file at compile time.

Here injection payloads go into every string and integer attribute of every op (and every value
field and program field) of every example program, through JSON:

* an op attribute, argument or value field holding a payload is refused by ``Program.from_json``
  with a typed error — before any code is generated, so before any compiler runs;
* a user-chosen name (kernel, tensor, dim, size, value name) may hold any text: it is accepted,
  and the emitted source outside ``//`` comments never contains it (identifiers are sanitised),
  while comments stay single printable lines.

CI runs a bounded sweep (every op attribute site with a few payloads, plus a short hypothesis
run); ``--full`` runs a long hypothesis run and compiles what is accepted with the offline clang.
"""

from __future__ import annotations

import importlib
import json
import re
from functools import lru_cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tilesim.codegen import emit_hip
from tilesim.errors import TilesimError
from tilesim.ir import verify
from tilesim.ir.core import Op, Program, Value

EXAMPLES = ["gemm", "gemm_abt", "lds_gemm", "softmax", "int8_gemm", "fp8_gemm", "sparse_gemm", "batched_small_gemm",
            "lds_tr_gemm", "mxfp8_gemm", "block_gemm"]

STRING_PAYLOADS = [
    '+ 0); asm volatile("s_trap 2"); s5 = (s1 +',  # issue 19's binop payload
    '*\n#include "/etc/hostname"',  # issue 19's file read
    '0}; __builtin_trap(); //',
    "*/ s_trap /*",
    "add\n",
    "x\\",
    "\udc80",
]
INT_PAYLOADS = [2**31, -2**31 - 1, 2**40, 10**30, -(10**30)]
OTHER_PAYLOADS = [True, 1.5, None, [], {}, {"tuple": [[]]}]
# what a payload would leave in code (a sanitised name may keep the letters as an identifier:
# `k_asm_volatile_s_trap_2_...` is harmless, so the markers hold characters no identifier has)
MARKERS = ("s_trap 2", "#include \"/", "__builtin_trap(")


def _shuffle_const_branch() -> Program:
    """The op kinds no example uses (shuffle, const, branch), in one small program."""
    import tilesim as ts
    from tilesim.matrix import lookup

    lay = lookup("v_wmma_f32_16x16x16_f16", "gfx1201").layout("C")

    @ts.kernel
    def extra(X: ts.Tensor["f32", "M", "N"], Y: ts.Tensor["f32", "M", "N"]):
        ts.grid(1)
        t = ts.tile_id(0)
        x = ts.load(X[t * 16:, 0:], lay)
        with ts.when(t < 1):
            ts.store(Y[0:, 0:], ts.shuffle(x, [(i + 3) % 32 for i in range(32)]))

    d = json.loads(extra.specialize(target="gfx1201", M=16, N=16).to_json())
    d["body"].insert(0, {"kind": "const", "out": {"id": 900, "kind": "scalar"}, "args": [], "attrs": {"value": 5}})
    return Program.from_json(json.dumps(d))


@lru_cache(maxsize=None)
def _bases() -> tuple[tuple[str, str], ...]:
    """(name, JSON text) of the first program of every example, plus the extra program."""
    out = [(m, importlib.import_module(f"examples.{m}").programs()[0].to_json()) for m in EXAMPLES]
    from examples.block_gemm import program

    async_copies = program("sm_90", async_copy=True).to_json()  # lds_copy_async, async_commit, async_wait
    return (*out, ("extra", _shuffle_const_branch().to_json()), ("block_gemm async", async_copies))


def _leaves(x, path=()):
    """(path, value) of every scalar leaf, not descending into layouts (the layouts module's own)."""
    if isinstance(x, dict):
        for k, v in x.items():
            if k != "layout":
                yield from _leaves(v, (*path, k))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from _leaves(v, (*path, i))
    else:
        yield path, x


def _site_kind(doc: dict, path: tuple) -> str:
    """'name' for user-chosen names (any text, sanitised), 'op' for everything else."""
    if path in (("name",),) or (path[0] == "tensors" and path[2] in (0, 2)) or (path[0] == "sizes" and path[2] == 0):
        return "name"
    if path[-1] == "name" and "out" in path:
        return "name"
    return "op"


def _op_of(doc: dict, path: tuple) -> tuple[str, tuple]:
    """The innermost op on ``path`` and the path inside it ('program' and the whole path outside ops)."""
    node, kind, rel = doc, "program", path
    for j, p in enumerate(path):
        node = node[p]
        if isinstance(node, dict) and "kind" in node and "attrs" in node:
            kind, rel = node["kind"], path[j + 1:]
    return kind, rel


@lru_cache(maxsize=None)
def _docs() -> tuple[dict, ...]:
    return tuple(json.loads(text) for _, text in _bases())


@lru_cache(maxsize=None)
def _sites() -> tuple[tuple[int, tuple, str, str], ...]:
    """Every leaf of every base program: (base index, path, site kind, op kind)."""
    out = []
    for i, doc in enumerate(_docs()):
        for path, _ in _leaves(doc):
            if path and path[0] != "format":
                out.append((i, path, _site_kind(doc, path), _op_of(doc, path)[0]))
    return tuple(out)


@lru_cache(maxsize=None)
def _attribute_sites() -> tuple[tuple[int, tuple, str], ...]:
    """One site per (op kind, attribute or argument position, leaf shape), over all the bases."""
    seen, out = set(), []
    for i, path, site, op in _sites():
        if op == "program" or site != "op":
            continue
        rel = _op_of(_docs()[i], path)[1]
        key = (op, tuple("#" if isinstance(p, int) else p for p in rel))
        if key not in seen:
            seen.add(key)
            out.append((i, path, op))
    return tuple(out)


def _with(doc: dict, path: tuple, value) -> str:
    """``doc`` as JSON with ``value`` at ``path`` (changed in place and restored: the docs are big).
    A tensor's new name is also given to the loads and stores of that tensor; a size's new name to
    every tensor dim of that name and the other way round (sizes must name the tensors' dims)."""
    node = doc
    for p in path[:-1]:
        node = node[p]
    old = node[path[-1]]
    node[path[-1]] = value
    uses, dims = [], []
    if path[0] == "tensors" and path[2] == 0:
        uses = [o["attrs"] for o in _all_ops(doc["body"]) if o["attrs"].get("tensor") == old]
    for a in uses:
        a["tensor"] = value
    if (path[0] == "sizes" and path[-1] == 0) or (path[0] == "tensors" and len(path) == 4 and path[2] == 2):
        dims = [(t[2], j) for t in doc["tensors"] for j, d in enumerate(t[2]) if d == old and t[2] is not node]
        dims += [(e, 0) for e in doc["sizes"] if e[0] == old and e is not node]
    for holder, j in dims:
        holder[j] = value
    try:
        return json.dumps(doc)
    finally:
        node[path[-1]] = old
        for a in uses:
            a["tensor"] = old
        for holder, j in dims:
            holder[j] = old


def _all_ops(ops: list):
    for o in ops:
        yield o
        if "body" in o["attrs"]:
            yield from _all_ops(o["attrs"]["body"]["block"])


def _code(src: str) -> str:
    """The emitted source without its // comments, after checking each comment is one printable line."""
    out = []
    for ln in src.splitlines():
        if "//" in ln:
            code, comment = ln.split("//", 1)
            assert comment.isprintable() and comment.isascii() and not comment.endswith("\\"), ln
            out.append(code)
        else:
            out.append(ln)
    return "\n".join(out)


@lru_cache(maxsize=None)
def _base_code(base: int) -> str:
    return _code(emit_hip(Program.from_json(_bases()[base][1])).source)


def _try(base: int, path: tuple, payload, *, compile_with=None) -> str:
    """Put ``payload`` at ``path``; 'refused' (typed error at construction), or 'accepted' after
    checking that check and emit raise only typed errors and the code holds no payload."""
    text = _with(_docs()[base], path, payload)
    try:
        prog = Program.from_json(text)
    except TilesimError:
        return "refused"
    for fn in (verify.check, emit_hip):
        try:
            out = fn(prog)
        except TilesimError:
            return "accepted"
    code = _code(out.source)
    # a payload the unchanged program's code already holds (e.g. "0") proves nothing either way, nor
    # does one of letters, digits and '_' only: a sanitised name keeps those (name "00" -> k_00_12a264cd)
    if isinstance(payload, str) and payload.strip() and payload not in _base_code(base) \
            and not re.fullmatch(r"[A-Za-z0-9_]+", payload):
        assert payload not in code, (path, payload)
        for m in MARKERS:
            assert (m in payload) <= (m not in code), (path, payload, m)
    if isinstance(payload, int) and not isinstance(payload, bool) and abs(payload) >= 2**31:
        assert str(payload) not in out.source, (path, payload)
    if compile_with is not None and prog.target.startswith("gfx"):
        isa = compile_with(out.source, prog.target, wave_size=prog.wave_size).isa
        for m in MARKERS:
            assert m not in isa
    return "accepted"


def test_the_sweep_sees_every_op_kind_with_attributes():
    ops = {op for _, _, op in _attribute_sites()}
    from tilesim.ir.ops import KINDS

    with_attrs = {k for k, spec in KINDS.items() if spec.attrs}
    assert with_attrs <= ops, with_attrs - ops  # every kind that carries an attribute is attacked
    assert len(ops) >= 15


ROTATION = [STRING_PAYLOADS[0], STRING_PAYLOADS[1], 2**31, {"tuple": [[]]}, "\udc80", -2**31 - 1, STRING_PAYLOADS[2]]


def _at(doc, path: tuple):
    for p in path:
        doc = doc[p]
    return doc


def _legit(op: str, path: tuple, payload, original) -> bool:
    """Where a payload is a legal value: what is there already (None as a no-result op's out or a
    unary op's y), numbers as an elementwise constant, booleans as a flag, a plain name as an mma
    instruction (check reports an unknown one; emit refuses it)."""
    if payload == original and type(payload) is type(original):
        return True
    if isinstance(payload, bool):
        return path[-1] == "transpose"
    if isinstance(payload, str):
        return op in ("mma", "lds_load_tr") and path[-1] in ("instr", "family") \
            and re.fullmatch(r"[A-Za-z0-9_.]+", payload) is not None
    return isinstance(payload, (int, float)) and op == "elementwise" and "args" in path


def _sweep(payloads: list, rotate: bool) -> list:
    accepted = []
    for k, (base, path, op) in enumerate(_attribute_sites()):
        for payload in [payloads[k % len(payloads)]] if rotate else payloads:
            if _try(base, path, payload) == "accepted" and not _legit(op, path, payload, _at(_docs()[base], path)):
                accepted.append((op, path[-4:], payload))
    return accepted


def test_every_op_attribute_refuses_payloads():
    """Every attribute/argument/value-field site of every op kind (one payload each, rotating
    through the list): a payload there is a typed error at construction."""
    assert not _sweep(ROTATION, rotate=True)


@pytest.mark.slow
def test_every_op_attribute_refuses_every_payload():
    assert not _sweep(STRING_PAYLOADS + INT_PAYLOADS + OTHER_PAYLOADS, rotate=False)


def test_issue_19_payloads_are_refused_and_never_reach_the_compiler():
    from examples.gemm import gemm

    d = json.loads(gemm.specialize(target="gfx1201", M=32, N=32, K=32).to_json())
    for payload in STRING_PAYLOADS[:2]:
        for o in d["body"]:
            if o["kind"] == "binop":
                o["attrs"]["op"] = payload
                break
        with pytest.raises(TilesimError, match="binop op="):
            Program.from_json(json.dumps(d))


def test_the_generator_itself_writes_only_table_tokens():
    """Defence in depth: an op forced past construction (object.__setattr__) is refused by the
    generator, which looks the op up in the table instead of writing its text."""
    from examples.gemm import gemm
    from tilesim.codegen import CodegenError

    prog = gemm.specialize(target="gfx1201", M=32, N=32, K=32)
    binop = next(op for op in prog.walk() if op.kind == "binop")
    object.__setattr__(binop, "attrs", (("op", STRING_PAYLOADS[0]),))
    with pytest.raises(CodegenError, match="binop op"):
        emit_hip(prog)
    prog = _shuffle_const_branch()
    shuf = next(op for op in prog.walk() if op.kind == "shuffle")
    object.__setattr__(shuf, "attrs", (("src_lane", ('0); asm("s_trap 2"); //',) * 32),))
    with pytest.raises(CodegenError, match="shuffle source lane"):
        emit_hip(prog)
    prog = _shuffle_const_branch()
    const = next(op for op in prog.walk() if op.kind == "const")
    object.__setattr__(const, "attrs", (("value", "1; s_trap"),))
    with pytest.raises(CodegenError, match="const value"):
        emit_hip(prog)


def test_names_hold_any_text_and_stay_out_of_the_code():
    seen, sites = set(), []
    for i, p, site, _ in _sites():
        key = (p[0], p[-1]) if p[0] != "tensors" else ("tensors", p[2])
        if site == "name" and key not in seen:
            seen.add(key)
            sites.append((i, p))
    assert {p[0] for _, p in sites} >= {"name", "tensors", "sizes", "body"}
    for k, (base, path) in enumerate(sites):
        for payload in STRING_PAYLOADS[k % 4::4]:
            assert _try(base, path, payload) == "accepted" or "\udc80" in payload


_PAYLOADS = st.one_of(st.sampled_from(STRING_PAYLOADS + INT_PAYLOADS + OTHER_PAYLOADS),
                      st.text(max_size=12), st.integers(), st.floats())


def _fuzz(data, compile_with=None):
    sites = _sites()
    base, path, site, op = sites[data.draw(st.integers(0, len(sites) - 1), label="site")]
    payload = data.draw(_PAYLOADS, label="payload")
    outcome = _try(base, path, payload, compile_with=compile_with)
    if site == "op" and isinstance(payload, str) and op != "program":
        assert outcome == "refused" or _legit(op, path, payload, _at(_docs()[base], path)), (op, path, payload)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_fuzz_payloads_anywhere(data):
    _fuzz(data)


@pytest.mark.slow
@pytest.mark.compiler
@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_fuzz_payloads_anywhere_full_and_compiled(data):
    from tilesim.hw import offline

    _fuzz(data, compile_with=offline.compile_hip)


def test_value_and_op_constructors_refuse_payloads_in_python_too():
    s = Value(1, "scalar")
    for payload in STRING_PAYLOADS[:2]:
        with pytest.raises(TilesimError):
            Op("binop", Value(2, "scalar"), (s, 1), (("op", payload),))
        with pytest.raises(TilesimError):
            Op("tile_id", Value(2, "scalar"), (), (("axis", payload),))
        with pytest.raises(TilesimError):
            Op("mma", Value(2, "scalar"), (), (("instr", payload),))


def test_lds_elem_bytes_that_contradict_the_buffer_dtype_are_refused_at_load():
    """Program JSON whose LDS buffer says 3 bytes per f16 element (the DSL derives 2) is refused with a
    typed error when read, not passed on to the generator (which indexed a table by 24 bits: KeyError)."""
    import json

    from examples import lds_gemm
    from tilesim.errors import VerifyError
    from tilesim.ir.core import Program

    doc = json.loads(lds_gemm.programs()[0].to_json())
    hits = []

    def edit(x):
        if isinstance(x, dict):
            if isinstance(x.get("lds"), list):
                x["lds"][2] = 3
                hits.append(x)
            for y in x.values():
                edit(y)
        elif isinstance(x, list):
            for y in x:
                edit(y)

    edit(doc)
    assert hits
    with pytest.raises(VerifyError, match="elem_bytes 3 does not match"):
        Program.from_json(json.dumps(doc))
