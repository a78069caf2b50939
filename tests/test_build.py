"""The extension's link arguments keep one libstdc++ in the process (turbogelu/_build.py).

The GPU check's first run on an H200 (issue 16) crashed in the first CPU op: that machine's
g++ wrapper links a static libstdc++ into shared objects, and beside the shared libstdc++
that torch loads the static copy's iostreams read their locale facets from the wrong copy.
Here a small library with an ifstream and an ostringstream is built with -static-libstdc++,
as that wrapper does, and loaded into a process that imported torch first: with
``_build.link_args()`` both work and the library depends on the shared libstdc++; the built
extension itself depends on it too.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import subprocess_env

import turbogelu
from turbogelu import _build

LINUX = sys.platform.startswith("linux")
CXX = shutil.which("g++")

LIBRARY = r"""
#include <fstream>
#include <sstream>
#include <string>
// The number read from `path` (-1 when nothing is read) and the length of a formatted line.
extern "C" int read_int(const char* path) {
  std::ifstream f(path);
  int v = -1;
  f >> v;
  return v;
}
extern "C" int formatted_length() {
  std::ostringstream s;
  s << "x=" << 12345 << ", y=" << 3.5;
  return static_cast<int>(s.str().size());
}
"""

# Run with the library's path and a file holding "42": torch first, as for the extension.
PROBE = r"""
import ctypes, sys
import torch  # noqa: F401  (loads the shared libstdc++ before the library)
lib = ctypes.CDLL(sys.argv[1])
print(lib.read_int(sys.argv[2].encode()), lib.formatted_length())
"""


def _needed_libraries(path: Path) -> str:
    return subprocess.run(
        ["readelf", "-d", str(path)], capture_output=True, text=True, check=True
    ).stdout


@pytest.mark.skipif(not LINUX or CXX is None, reason="needs g++ on Linux")
def test_a_static_libstdcxx_build_still_has_working_iostreams(tmp_path):
    if shutil.which("readelf") is None:
        pytest.skip("needs readelf (binutils)")
    src = tmp_path / "lib.cpp"
    src.write_text(LIBRARY)
    number = tmp_path / "number"
    number.write_text("42\n")
    lib = tmp_path / "lib.so"
    # The link line of setup.py's extension (torch's flags, then extra_link_args), plus the
    # -static-libstdc++ that the GPU machine's compiler adds.
    cmd = [CXX, "-O2", "-fPIC", "-shared", "-Wl,-O1", "-Wl,-Bsymbolic-functions", str(src)]
    cmd += ["-o", str(lib), "-static-libstdc++", *_build.link_args()]
    subprocess.run(cmd, check=True, capture_output=True)
    assert "libstdc++.so" in _needed_libraries(lib), "the shared libstdc++ is not linked"
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(lib), str(number)],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["42", str(len("x=12345, y=3.5"))]


def test_link_args_per_platform():
    assert _build.link_args("darwin") == []
    linux = _build.link_args("linux")
    assert "-fopenmp" in linux and "-lstdc++" in linux
    assert "-lstdc++" not in _build.link_args("win32")


@pytest.mark.skipif(not LINUX, reason="ELF only")
def test_the_extension_links_the_shared_libstdcxx():
    if shutil.which("readelf") is None:
        pytest.skip("needs readelf (binutils)")
    (ext,) = Path(turbogelu.__file__).parent.glob("_C*.so")
    assert "libstdc++.so" in _needed_libraries(ext)
