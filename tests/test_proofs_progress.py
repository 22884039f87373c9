"""`python -m proofs` shows progress on a terminal (issue 18: it was silent for ~18 s) and nothing
when stderr is a pipe or a log."""

from __future__ import annotations

from proofs.__main__ import _Progress


def test_progress_prints_each_phase_on_a_terminal(capsys):
    show = _Progress(enabled=True)
    show("catalog layouts", 3, 3)
    show("kernel sizes", 40, 40)
    show.done()
    err = capsys.readouterr().err
    assert "proofs: catalog layouts 3/3" in err and "proofs: kernel sizes 40/40" in err
    assert err.endswith("\r")  # the line is cleared before the report prints


def test_progress_is_silent_when_not_a_terminal(capsys):
    show = _Progress(enabled=False)
    show("catalog layouts", 1, 10)
    show.done()
    assert capsys.readouterr() == ("", "")


def test_progress_rate_limits_intermediate_updates_but_always_shows_the_last(capsys):
    show = _Progress(enabled=True)
    for i in range(1, 1001):
        show("emitted index maps", i, 1000)
    err = capsys.readouterr().err
    assert err.count("\r") < 100 and "emitted index maps 1000/1000" in err
