"""A ``torch.export`` program that calls every public turbogelu op, saved as
tests/fixtures/ops_export.pt2 before issue 36's one stack rewrote the ops: users' saved exports
name ``torch.ops.turbogelu.*`` with these schemas, and tests/test_export_fixture.py checks that
the saved file still loads, still calls those ops and gives the eager ops' bits.

Regenerate (only on purpose: the point is that a file saved by an older version keeps working):
    .venv/bin/python tests/export_fixture.py --write
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "ops_export.pt2"
WIDTH = 24  # one 16-lane vector and a tail of 8 per row: both the vector loop and its tail run


class EveryOp(torch.nn.Module):
    """Sums each op's result, so one output depends on every op; softmax last."""

    def forward(self, x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        import turbogelu

        y = turbogelu.gelu(x) + turbogelu.gelu(x, "tanh", backward="matched")
        y = y + turbogelu.sigmoid(x) + turbogelu.tanh(x, tier="paper") + turbogelu.silu(x)
        y = y + turbogelu.softcap(x, 30.0) + turbogelu.softcap(x, 2.5, tier="paper")
        y = y + turbogelu.swiglu(x, b) + turbogelu.exp2(x.clamp(max=8.0))
        return turbogelu.softmax(y, -1)


def example(rows: int, dtype=torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs from integer patterns (no random generator): values in [-6, 6)."""
    k = torch.arange(rows * WIDTH, dtype=torch.int64)
    x = ((k * 7919) % 3001 - 1500).to(torch.float64) / 250.0
    b = ((k * 104729) % 2003 - 1001).to(torch.float64) / 500.0
    return x.reshape(rows, WIDTH).to(dtype), b.reshape(rows, WIDTH).to(dtype)


def export() -> torch.export.ExportedProgram:
    batch = torch.export.Dim("batch", min=1, max=4096)
    return torch.export.export(
        EveryOp(), example(8), dynamic_shapes={"x": {0: batch}, "b": {0: batch}}
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="rewrite the fixture")
    if not parser.parse_args(argv).write:
        parser.error("nothing to do without --write")
    torch.export.save(export(), FIXTURE)
    print(f"wrote {FIXTURE} (torch {torch.__version__})")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.exit(main())
