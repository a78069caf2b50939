"""An optional control for the lab's fitting methods: Sollya's ``fpminimax`` run as an
external program (only when the ``sollya`` binary is installed; its figures are a
cross-check, never an exact reference)."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .linear_form import check_interval

# fpminimax format of each rounding format: Sollya's names, or a precision in bits (bfloat16
# has 8 significant bits; Sollya's integer formats bound the precision, not the exponent).
SOLLYA_FORMATS = {"float64": "D", "float32": "SG", "float16": "HP", "bfloat16": "8"}


def sollya_available() -> bool:
    """Whether the ``sollya`` program is on PATH."""
    return shutil.which("sollya") is not None


def sollya_version(executable: str | None = None) -> str | None:
    """The installed Sollya's version ("8.0" from "This is sollya 8.0 ..."), or None where
    it is not installed or says no version. fpminimax's lattice reduction and Remez steps
    change between versions, so its coefficients are compared only within one version."""
    exe = executable or shutil.which("sollya")
    if exe is None:
        return None
    try:
        st = os.stat(exe)
    except OSError:
        return None
    return _version_of(exe, st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=8)
def _version_of(exe: str, mtime_ns: int, size: int) -> str | None:
    """One executable's version, asked once per process and file state (Table 2 records it
    with every control fit)."""
    try:
        proc = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"\bsollya\s+([0-9][\w.]*)", proc.stdout + proc.stderr, re.IGNORECASE)
    return m.group(1) if m else None


@dataclass
class SollyaResult:
    """``fpminimax`` coefficients (aligned with the degrees asked for), as float64 and exactly
    (Sollya's dyadic output), the error ``dirtyinfnorm`` reports (absolute or relative as
    asked; an estimate, not a bound), and the script and output for the record."""

    coeffs: np.ndarray
    exact: list[Fraction]
    error: float
    script: str
    output: str


def _dyadic(x: float) -> str:
    """A float as Sollya's exact dyadic constant ``m b e`` (= m * 2^e)."""
    num, den = Fraction(float(x)).as_integer_ratio()
    return f"{num}b{-(den.bit_length() - 1)}"


def _parse_dyadic(s: str) -> Fraction:
    s = s.strip()
    if "b" in s:
        mant, exp = s.split("b")
        return Fraction(int(mant)) * Fraction(2) ** int(exp)
    return Fraction(int(s))


def sollya_fpminimax(
    expr: str,
    degrees: Sequence[int],
    formats: str | Sequence[str | int],
    interval: tuple[float, float],
    *,
    error: str = "absolute",
    point: str = "floating",
    prec: int = 300,
    timeout: float = 300.0,
    executable: str | None = None,
) -> SollyaResult:
    """Sollya's ``fpminimax``: a polynomial ``sum_{d in degrees} c_d x^d`` with each ``c_d`` in
    its format, near-minimax for ``expr`` on ``interval`` (Brisebarre-Chevillard's lattice
    method), run through the external ``sollya`` program with a generated script.

    ``expr``: a Sollya expression in the free variable ``x`` (e.g. ``"exp(x)"``,
    ``"x*erfc(-x/sqrt(2))/2 - x/2"``); ``degrees``: the monomials; ``formats``: one format
    for all or one per degree, each a name of ``rounding.ROUNDING_FORMATS`` (bfloat16 becomes a
    precision of 8 bits), a Sollya format token (``"DD"``) or an int (bits of precision);
    ``error``: 'absolute' or 'relative'; ``point``: 'floating' or 'fixed' (fixed: the formats are
    numbers of fractional bits); ``prec``: Sollya's working precision in bits. A part fixed
    beforehand (say ``x/2``) is handled by fitting ``expr - x/2`` on the other monomials.
    Interval ends are passed exactly (dyadic). Any Sollya warning (a syntax error, a name other
    than ``x``, ...) is an error: Sollya would go on with a different problem. Raises
    ``RuntimeError`` when Sollya is not installed, fails, warns or times out. A control for the
    lab's own methods: its error is Sollya's estimate, never an exact reference.
    """
    exe = executable or shutil.which("sollya")
    if exe is None or shutil.which(exe) is None:
        raise RuntimeError(
            "sollya is not installed (no 'sollya' on PATH); on Debian/Ubuntu: "
            "apt-get install sollya"
        )
    degrees = [int(d) for d in degrees]
    if not degrees or len(set(degrees)) != len(degrees) or min(degrees) < 0:
        raise ValueError(f"degrees must be distinct non-negative ints, got {degrees}")
    fmts = [formats] * len(degrees) if isinstance(formats, str | int) else list(formats)
    if len(fmts) != len(degrees):
        raise ValueError(f"{len(fmts)} formats for {len(degrees)} degrees")
    tokens = [
        str(SOLLYA_FORMATS.get(fm, fm)) if isinstance(fm, str) else str(int(fm)) for fm in fmts
    ]
    if error not in ("absolute", "relative"):
        raise ValueError(f"error must be 'absolute' or 'relative', got {error!r}")
    if point not in ("floating", "fixed"):
        raise ValueError(f"point must be 'floating' or 'fixed', got {point!r}")
    lo, hi = check_interval(*interval)
    err_expr = "p - f" if error == "absolute" else "p/f - 1"
    lines = [
        "verbosity = 1!;",  # 1: syntax errors and unbound names are reported (as Warning)
        "display = dyadic!;",
        "tgfree = x;",  # binds the free variable to x before expr is read
        f"prec = {int(prec)}!;",
        f"f = {expr};",
        f"dom = [{_dyadic(lo)}; {_dyadic(hi)}];",
        f"p = fpminimax(f, [|{', '.join(map(str, degrees))}|], [|{', '.join(tokens)}|], dom, "
        f"{point}, {error});",
        *[f'print("TGCOEFF", {d}, coeff(p, {d}));' for d in degrees],
        f'print("TGERR", dirtyinfnorm({err_expr}, dom));',
        'print("TGDONE");',
        "quit;",
    ]
    script = "\n".join(lines) + "\n"
    try:
        proc = subprocess.run(
            [exe], input=script, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise RuntimeError(f"sollya timed out after {timeout} s") from exc
    out = proc.stdout + proc.stderr
    if any(line.startswith("Warning") for line in out.splitlines()):
        # A syntax error is skipped up to the next ';' and an unknown name is taken for the
        # free variable, both silently at verbosity 0: never accept a result after a warning.
        raise RuntimeError(f"sollya reported a problem:\n{script}\n{out}")
    found: dict[int, Fraction] = {}
    err_val = None
    done = False
    try:
        for line in proc.stdout.splitlines():
            parts = line.split()
            if parts[:1] == ["TGCOEFF"] and len(parts) == 3:
                found[int(parts[1])] = _parse_dyadic(parts[2])
            elif parts[:1] == ["TGERR"] and len(parts) == 2:
                err_val = float(_parse_dyadic(parts[1]))
            elif parts == ["TGDONE"]:
                done = True
    except ValueError as exc:  # e.g. "error" printed in place of a number
        raise RuntimeError(f"sollya fpminimax failed:\n{script}\n{out}") from exc
    if proc.returncode != 0 or not done or set(found) != set(degrees) or err_val is None:
        raise RuntimeError(f"sollya fpminimax failed (rc {proc.returncode}):\n{script}\n{out}")
    exact = [found[d] for d in degrees]
    return SollyaResult(
        coeffs=np.array([float(q) for q in exact]),
        exact=exact,
        error=err_val,
        script=script,
        output=out,
    )
