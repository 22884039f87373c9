"""Laws of the layout algebra, checked over whole domains and random layouts.

Expected values come from the defining laws, evaluated pointwise with plain Python over every
index (never from the code under test): composition is ``(g∘f)(x) = g(f(x))``, the inverse lists
exactly the owners, the product is the mixed-radix concatenation, a linear layout is the XOR of
its bases, and every index expression evaluates to the table.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tilesim.errors import LayoutError
from tilesim.layouts import Layout, compose, expressions, from_json, product, to_json

POW2 = st.sampled_from([1, 2, 4, 8, 16])
SIZES = st.integers(min_value=1, max_value=12)


def _as_set(lay: Layout) -> set[tuple[tuple[int, ...], tuple[int, ...]]]:
    hw, lg = lay.pairs()
    return {(tuple(map(int, h)), tuple(map(int, g))) for h, g in zip(hw, lg)}


@st.composite
def relations(draw, in_sizes=None, out_sizes=None, total=False, function=False):
    """A random finite relation between a 1-2 dim hardware space and a 1-2 dim logical space."""
    ins = in_sizes or draw(st.lists(SIZES, min_size=1, max_size=2))
    outs = out_sizes or draw(st.lists(SIZES, min_size=1, max_size=2))
    in_dims = tuple((f"h{i}", s) for i, s in enumerate(ins))
    out_dims = tuple((f"o{i}", s) for i, s in enumerate(outs))
    hw_all = list(itertools.product(*(range(s) for s in ins)))
    lg_all = list(itertools.product(*(range(s) for s in outs)))
    pairs = []
    for h in hw_all:
        if function or total:
            n = 1 if function else draw(st.integers(1, 2))
        else:
            n = draw(st.integers(0, 2))
        for _ in range(n):
            pairs.append((h, lg_all[draw(st.integers(0, len(lg_all) - 1))]))
    hw = np.array([p[0] for p in pairs], dtype=np.int64).reshape(-1, len(ins))
    lg = np.array([p[1] for p in pairs], dtype=np.int64).reshape(-1, len(outs))
    return Layout.from_pairs(in_dims, out_dims, hw, lg)


@st.composite
def linear_layouts(draw):
    ins = draw(st.lists(POW2, min_size=1, max_size=3))
    outs = draw(st.lists(POW2, min_size=1, max_size=2))
    in_dims = tuple((f"h{i}", s) for i, s in enumerate(ins))
    out_dims = tuple((f"o{i}", s) for i, s in enumerate(outs))
    bases = {
        name: [tuple(draw(st.integers(0, o - 1)) for o in outs) for _ in range(size.bit_length() - 1)]
        for name, size in in_dims
    }
    return Layout.from_bases(in_dims, out_dims, bases), bases


@given(relations(), st.data())
@settings(max_examples=150, deadline=None)
def test_compose_is_pointwise_relational_composition(f, data):
    g = data.draw(relations(in_sizes=[s for _, s in f.out_dims]))
    g = Layout.from_pairs(f.out_dims, g.out_dims, *g.pairs())
    expected = {(x, z) for (x, y) in _as_set(f) for (y2, z) in _as_set(g) if y == y2}
    assert _as_set(compose(g, f)) == expected
    assert f.then(g) == compose(g, f)


@given(relations())
@settings(max_examples=150, deadline=None)
def test_inverse_lists_every_owner_and_round_trips(lay):
    inv = lay.inverse()
    assert _as_set(inv) == {(y, x) for (x, y) in _as_set(lay)}
    assert inv.inverse() == lay
    assert hash(inv.inverse()) == hash(lay)


@given(relations(function=True))
@settings(max_examples=100, deadline=None)
def test_function_then_inverse_contains_identity(lay):
    # f⁻¹ ∘ f relates every x to itself (and to the other owners of f(x)); it is the identity
    # exactly when f is injective.
    back = lay.then(lay.inverse())
    ident = {(x, x) for (x, _) in _as_set(lay)}
    assert ident <= _as_set(back)
    assert (_as_set(back) == ident) == lay.is_injective()


@given(relations(), relations(), relations())
@settings(max_examples=60, deadline=None)
def test_product_is_associative(a, b, c):
    assert product(product(a, b), c) == product(a, product(b, c))


@given(relations(), relations())
@settings(max_examples=100, deadline=None)
def test_product_is_mixed_radix_concatenation(a, b):
    b = b.rename(**{n: n.replace("h", "x") for n in b.in_names}) if b.in_names == ("h0",) else b
    p = a * b
    expected = set()
    da, db = dict(a.in_dims), dict(a.out_dims)
    for (ha, ga), (hb, gb) in itertools.product(_as_set(a), _as_set(b)):
        h = {n: v for n, v in zip(a.in_names, ha)}
        for n, v in zip(b.in_names, hb):
            h[n] = h.get(n, 0) + da.get(n, 1) * v
        g = {n: v for n, v in zip(a.out_names, ga)}
        for n, v in zip(b.out_names, gb):
            g[n] = g.get(n, 0) + db.get(n, 1) * v
        expected.add((tuple(h[n] for n in p.in_names), tuple(g[n] for n in p.out_names)))
    assert _as_set(p) == expected


@given(linear_layouts())
@settings(max_examples=150, deadline=None)
def test_linear_layout_is_xor_of_bases_and_table_agrees(pair):
    lay, bases = pair
    assert lay.is_linear()
    assert {k: [tuple(v) for v in vs] for k, vs in lay.bases.items()} == {k: [tuple(v) for v in vs] for k, vs in bases.items()}
    names = [n for n, _ in lay.in_dims]
    for idx in itertools.product(*(range(s) for _, s in lay.in_dims)):
        want = [0] * len(lay.out_dims)
        for name, i in zip(names, idx):
            for b, vec in enumerate(bases[name]):
                if (i >> b) & 1:
                    want = [w ^ v for w, v in zip(want, vec)]
        got = lay.apply(**dict(zip(names, idx)))
        assert [got[n] for n in lay.out_names] == want
    # the same map given as a table is the same value
    again = Layout.from_pairs(lay.in_dims, lay.out_dims, *lay.pairs())
    assert again == lay and again.is_linear()


@given(linear_layouts(), st.data())
@settings(max_examples=80, deadline=None)
def test_linear_compose_matches_basis_composition(pair, data):
    f, _ = pair
    outs = data.draw(st.lists(POW2, min_size=1, max_size=2))
    g_out = tuple((f"z{i}", s) for i, s in enumerate(outs))
    g = Layout.from_bases(
        f.out_dims, g_out,
        {name: [tuple(data.draw(st.integers(0, o - 1)) for o in outs) for _ in range(s.bit_length() - 1)]
         for name, s in f.out_dims},
    )
    h = compose(g, f)
    assert h.is_linear()
    # linearity: the bases of g∘f are g applied to f's bases
    for name, vecs in f.bases.items():
        for b, v in enumerate(vecs):
            want = g.apply(**dict(zip(f.out_names, v)))
            assert h.bases[name][b] == tuple(want[n] for n in g.out_names)


@given(relations(function=True))
@settings(max_examples=100, deadline=None)
def test_index_expressions_equal_the_table(lay):
    exprs = expressions(lay)
    grid = {n: np.array(c) for n, c in zip(lay.in_names, zip(*itertools.product(*(range(s) for _, s in lay.in_dims))))}
    table = lay.apply(**grid)
    held = table[lay.out_names[0]] >= 0
    for name, e in exprs.items():
        assert np.array_equal(e.evaluate(**grid)[held], table[name][held])


@given(linear_layouts())
@settings(max_examples=100, deadline=None)
def test_linear_expressions_as_python_text_equal_the_table(pair):
    lay, _ = pair
    for idx in itertools.product(*(range(s) for _, s in lay.in_dims)):
        env = dict(zip(lay.in_names, idx))
        got = lay.apply(**env)
        for name, e in expressions(lay).items():
            assert eval(e.py(), {}, env) == got[name], (e.py(), env)  # noqa: S307 - our own generated text


@given(relations())
@settings(max_examples=100, deadline=None)
def test_json_round_trip(lay):
    assert from_json(to_json(lay)) == lay


@given(relations())
@settings(max_examples=100, deadline=None)
def test_predicates_agree_with_counts(lay):
    pairs = _as_set(lay)
    hw_all = set(itertools.product(*(range(s) for _, s in lay.in_dims)))
    lg_all = set(itertools.product(*(range(s) for _, s in lay.out_dims)))
    hw_count = {h: sum(1 for x, _ in pairs if x == h) for h in hw_all}
    lg_count = {g: sum(1 for _, y in pairs if y == g) for g in lg_all}
    assert lay.is_function() == all(c <= 1 for c in hw_count.values())
    assert lay.is_total() == all(c >= 1 for c in hw_count.values())
    assert lay.is_injective() == all(c <= 1 for c in lg_count.values())
    assert lay.covers() == all(c >= 1 for c in lg_count.values())
    copies = lay.replication()["copies"]
    assert sum(copies.values()) == len(lg_all)
    for c, n in copies.items():
        assert n == sum(1 for v in lg_count.values() if v == c)


def test_rdna3_accumulator_example_from_the_design():
    # RDNA3 wave32 f32 accumulator: row = 2*v + lane/16 (RDNA3 ISA §7.9, "C/D matrix layout").
    c = Layout.from_function({"lane": 32, "slot": 8}, {"row": 16, "col": 16},
                             lambda lane, slot: {"row": 2 * slot + lane // 16, "col": lane % 16}, elem_bits=32)
    assert c.apply(lane=17, slot=3) == {"row": 7, "col": 1}
    assert c.owners_of(row=7, col=1) == [{"lane": 17, "slot": 3}]
    assert {k: v.text for k, v in expressions(c).items()} == {"row": "lane / 16 + slot * 2", "col": "lane % 16"}


def test_replication_and_broadcast_are_explicit():
    a = Layout.from_logical({"lane": 32, "slot": 16}, {"row": 16, "col": 16},
                            lambda row, col: [{"lane": row, "slot": col}, {"lane": row + 16, "slot": col}], elem_bits=16)
    assert a.owners_of(row=3, col=5) == [{"lane": 3, "slot": 5}, {"lane": 19, "slot": 5}]
    rep = a.replication()
    assert rep["copies"] == {2: 256} and rep["broadcast_bits"] == [("lane", 4)]
    assert not a.is_injective() and a.is_function() and a.covers()
    # one register read as two logical elements (CBSZ-style broadcast)
    b = Layout.from_logical({"lane": 2}, {"block": 2, "row": 2},
                            lambda block, row: {"lane": row})
    assert b.elements_at(lane=1) == [{"block": 0, "row": 1}, {"block": 1, "row": 1}]
    assert not b.is_function() and b.replication()["broadcast_reads"] == 2


def test_locations_bits_across_register_tuples():
    f64 = Layout.from_function({"lane": 1, "slot": 2}, {"row": 1, "col": 2}, lambda lane, slot: {"row": 0 * slot, "col": slot},
                               elem_bits=64)
    assert [tuple(x) for x in f64.locations()] == [(0, 0, 0, 0, 0, 0, 63), (0, 0, 1, 2, 0, 0, 63)]
    f6 = Layout.from_function({"lane": 1, "slot": 8}, {"row": 1, "col": 8}, lambda lane, slot: {"row": 0 * slot, "col": slot},
                              elem_bits=6)
    # element 5 spans bits 30..35 of the tuple: first register v0, bits 30-35; element 6 starts in v1 at bit 4
    locs = f6.locations()
    assert locs[5] == (0, 0, 5, 0, 0, 30, 35) and locs[6] == (0, 0, 6, 1, 0, 4, 9)


@pytest.mark.parametrize(
    "build",
    [
        lambda: Layout.from_pairs({"lane": 4}, {"row": 4}, [[4]], [[0]]),
        lambda: Layout.from_pairs({"lane": 0}, {"row": 4}, [], []),
        lambda: Layout.from_pairs({"lane": 4, "lane2": -1}, {"row": 4}, [], []),
        lambda: Layout.from_bases({"lane": 3}, {"row": 4}, {"lane": [(1,)]}),
        lambda: Layout.from_bases({"lane": 4}, {"row": 4}, {"lane": [(1,)]}),
        lambda: Layout.from_function({"lane": 4}, {"row": 4}, lambda lane: {"col": lane}),
        lambda: compose(Layout.identity({"a": 2}), Layout.identity({"b": 2})),
        lambda: Layout.identity({"a": 2}).apply(b=1),
        lambda: Layout.identity({"a": 2}).apply(a=5),
        lambda: Layout.from_logical({"lane": 2}, {"block": 2, "row": 2}, lambda block, row: {"lane": row}).apply(lane=0),
        lambda: Layout.identity({"a": 3}).bases,
        lambda: from_json('{"format": "nope"}'),
        lambda: from_json("not json"),
    ],
)
def test_bad_input_is_a_layout_error(build):
    with pytest.raises(LayoutError) as e:
        build()
    assert str(e.value)
