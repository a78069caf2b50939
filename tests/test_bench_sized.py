"""experiments.bench_sized: the 16-bit sized programs timed against the float32 tables."""

from __future__ import annotations

import pytest
import torch

import turbogelu.ops as tops
from experiments import bench_sized as bs
from experiments import probes
from turbogelu.approx import cells16

LAB = {"gelu_none": "gelu", "gelu_tanh": "gelu_tanh"}  # the lab's names of GELU's rows


def test_rows_time_each_program_and_name_the_degrees():
    kernel, sized = tops.cpu_kernel(), probes.OPS._set_sized_cells(True)
    probes.OPS._set_sized_cells(sized)
    rows = bs.run(size=4096, rounds=2, calls=2)
    assert [(r["function"], r["dtype"]) for r in rows] == [
        (fn, dt) for dt in bs.DTYPES for fn in bs.FUNCTIONS
    ]
    for r in rows:
        want = 2 if (LAB.get(r["function"], r["function"]), r["dtype"]) in cells16.SIZED else 3
        assert (r["degree"], r["float32_degree"]) == (want, 3), r
        assert all(r[k] > 0 for k in ("sized_us", "float32_tables_us", "torch_us", "limit_us"))
    # the switches are restored
    assert tops.cpu_kernel() == kernel and probes.OPS._set_sized_cells(sized) == sized
    text = bs.render(rows)
    assert text.count("\n") == len(rows) + 1 and "| gelu_none | bfloat16 | 2 (3) |" in text


def test_the_two_programs_differ_where_a_format_has_its_own():
    # what the rows time: with the switch off a sized dtype runs other tables
    x = torch.linspace(-4, 4, 4097).to(torch.bfloat16)
    with bs._program("sized"):
        sized = torch.ops.turbogelu.gelu(x)
    with bs._program("float32 tables"):
        float32 = torch.ops.turbogelu.gelu(x)
    assert not torch.equal(sized, float32)


def test_refuses_empty_runs():
    with pytest.raises(ValueError, match="must be >= 1"):
        bs.run(size=0)
