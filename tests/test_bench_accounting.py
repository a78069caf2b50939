"""experiments.bench_accounting: the 16-bit forward taken apart layer by layer (issue 41)."""

from __future__ import annotations

import pytest

from experiments import bench_accounting as acc


def _half16_available() -> bool:
    from experiments import probes

    return bool(probes.OPS._half16_available())


def test_accounting_times_every_layer_against_the_processes_own_copy():
    r = acc.run(("bfloat16", "float16"), size=4096, rounds=2, calls=3, processes=2)
    assert r["processes"] == 2 and r["program"] in ("poly", "cells")
    for dtype in ("bfloat16", "float16"):
        rows = r["dtypes"][dtype]["rows"]
        half = dtype == "float16" and _half16_available()
        assert tuple(rows) == acc.ROWS + (acc.HALF_ROWS if half else ())
        for row in rows.values():
            lo, hi = row["x_limit_range"]
            assert 0 < lo <= row["x_limit"] <= hi and row["us"] > 0 and row["overhead_us"] > 0
        # the fastest limit row of each process is 1x; the other is not below it
        assert min(rows[m]["x_limit_range"][0] for m in acc.LIMITS) == pytest.approx(1.0)
        assert all(rows[m]["x_limit_range"][0] >= 1.0 - 1e-12 for m in acc.LIMITS)
        assert len(r["dtypes"][dtype]["offsets"]) == 2
    text = acc.render(r)
    assert all(f"| {row} |" in text for row in acc.ROWS) and "2 processes" in text
    assert ("| half program, out= (probe) |" in text) == _half16_available()


def test_accounting_refuses_no_processes():
    with pytest.raises(ValueError, match="processes must be >= 1"):
        acc.run(processes=0)
