"""A ``.pt2`` export saved before the ops were rewritten (tests/export_fixture.py) still loads,
still calls the same ``torch.ops.turbogelu`` ops and gives the eager ops' bits."""

from __future__ import annotations

import torch
from conftest import assert_same_bits
from export_fixture import FIXTURE, EveryOp, example

import turbogelu  # noqa: F401  (registers the ops the saved program calls)

SAVED_OPS = {
    "turbogelu.gelu.default",
    "turbogelu.sigmoid.default",
    "turbogelu.tanh.default",
    "turbogelu.silu.default",
    "turbogelu.softcap.default",
    "turbogelu.swiglu.default",
    "turbogelu.exp2.default",
    "turbogelu.softmax.default",
}


def test_the_saved_export_loads_and_calls_the_same_ops():
    program = torch.export.load(FIXTURE)
    called = {
        str(node.target)
        for node in program.graph.nodes
        if node.op == "call_function" and str(node.target).startswith("turbogelu.")
    }
    assert called == SAVED_OPS


def test_the_saved_export_gives_the_eager_bits_at_other_batch_sizes():
    module = torch.export.load(FIXTURE).module()
    for rows in (1, 8, 37):  # the batch dimension was exported dynamic
        x, b = example(rows)
        assert_same_bits(module(x, b), EveryOp()(x, b), f"rows={rows}")
