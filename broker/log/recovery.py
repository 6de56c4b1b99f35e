"""Opening a log directory that exists: what is on disk becomes a list of sound segments.

`clean_directory` first finishes a swap the cleaner committed (`finish_swaps`: `<base>.log.swap`
exists) and removes leftovers: temp files, `.deleted` and `.cleaned` segments, orphan indexes.
Then a segment whose first batch is whole but not of magic 2 (odradek's pre-Kafka format was
magic 1) makes `refuse_foreign_format` raise LogFormatError, one line naming the directory,
before anything is recovered or cut. Then `load_segments`: without the clean-shutdown marker,
every segment from the one holding the recovery point on is recovered (segment.recover: CRC,
lengths, contiguous offsets; a torn or corrupt tail is cut and later segments dropped; indexes
rebuilt). Earlier segments, and all of them after a clean shutdown, load their indexes and are
recovered only if an index does not check out.

Functions of the directory and the segments only; `Log._load` (log.py) reads the checkpoints
around them and replays the producer state afterwards.
"""

from __future__ import annotations

import os
from pathlib import Path

from broker.log import checkpoint
from broker.log.index import CorruptIndexError
from broker.log.segment import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    LOG_SUFFIX,
    SWAP_END_SUFFIX,
    SWAP_SUFFIX,
    OnEpoch,
    Segment,
)
from broker.log.segment_recovery import LogFormatError, foreign_magic, recover
from broker.log.txn_index import TXN_INDEX_SUFFIX


def refuse_foreign_format(directory: Path, segments: list[Segment]) -> None:
    """Raise LogFormatError if a segment holds batches of another record format."""
    for seg in segments:
        magic = foreign_magic(seg)
        if magic is None:
            continue
        for opened in segments:
            opened.close()
        if magic == 1:
            what = "odradek's pre-Kafka record format (magic 1)"
        else:
            what = f"record batches of magic {magic} in {seg.log_path.name}, not Kafka's v2"
        raise LogFormatError(
            f"log directory {directory} holds {what}; delete it and start again: "
            "there is no converter"
        )


def clean_directory(directory: Path) -> list[int]:
    """Remove leftovers (temp files, deleted segments, orphan indexes); the segment bases."""
    finish_swaps(directory)
    bases = []
    for path in directory.iterdir():
        name = path.name
        if name.endswith((checkpoint.TMP_SUFFIX, DELETED_SUFFIX, CLEANED_SUFFIX)):
            path.unlink()
        elif name.endswith(LOG_SUFFIX) and len(path.stem) == 20 and path.stem.isdigit():
            bases.append(int(path.stem))
    for path in directory.iterdir():
        stem, _, suffix = path.name.partition(".")
        if suffix in ("index", "timeindex", "txnindex") and (
            not stem.isdigit() or int(stem) not in bases
        ):
            path.unlink()
    return sorted(bases)


def finish_swaps(directory: Path) -> None:
    """Finish a swap the cleaner committed (`<base>.log.swap` exists): remove every segment
    the swap replaces, [base, the end in `<base>.swap-end`), then give the swap's files
    their final names. Its indexes are rebuilt from the log (they may be half renamed)."""
    for path in sorted(directory.glob("*" + LOG_SUFFIX + SWAP_SUFFIX)):
        stem = path.name.partition(".")[0]
        if not (len(stem) == 20 and stem.isdigit()):
            continue
        base = int(stem)
        end_file = directory / (stem + SWAP_END_SUFFIX)
        end = checkpoint.read_offset(end_file)
        if end is None:  # written before the rename; its loss means no swap was made
            path.unlink()
            continue
        for other in directory.iterdir():
            o_stem, _, suffix = other.name.partition(".")
            if (
                o_stem.isdigit()
                and len(o_stem) == 20
                and base <= int(o_stem) < end
                and (
                    suffix
                    in ("log", "index", "timeindex", "txnindex", "index.swap", "timeindex.swap")
                )
            ):
                other.unlink()
        txn_swap = directory / (stem + TXN_INDEX_SUFFIX + SWAP_SUFFIX)
        if txn_swap.exists():  # not rebuilt from the log alone: it needs producer state
            os.replace(txn_swap, directory / (stem + TXN_INDEX_SUFFIX))
        os.replace(path, directory / (stem + LOG_SUFFIX))
        end_file.unlink()
        checkpoint.fsync_dir(directory)
    for path in directory.glob("*" + SWAP_END_SUFFIX):
        path.unlink()


def load_segments(
    segments: list[Segment],
    first_unflushed: int,
    on_epoch: OnEpoch,
    epochs_trusted: bool,
    interval: int,
    has_gaps: bool,
) -> list[Segment]:
    """The segments kept: those before `first_unflushed` loaded, the rest recovered; the
    first overlap, cut or (without `has_gaps`) gap ends the log there."""
    kept: list[Segment] = []
    for i, seg in enumerate(segments):
        if kept and (
            seg.base_offset < kept[-1].next_offset
            or (seg.base_offset > kept[-1].next_offset and not has_gaps)
        ):
            # An overlap: nothing from here on can be trusted. (A gap is the cleaner's:
            # it removed the last batches of a segment, or emptied one.) If the previous
            # segment's last batch jumped, its base offset was flipped: it goes too.
            jumped_at = kept[-1].last_batch_jumped_at
            if jumped_at is not None:
                kept[-1].truncate_at_position(jumped_at)
            for later in segments[i:]:
                later.unlink()
            break
        if i >= first_unflushed:
            cut = recover(seg, interval, on_epoch)
        else:
            cut = _load_segment(seg, interval, on_epoch, epochs_trusted)
        if cut and kept and seg.size_bytes == 0:
            seg.unlink()
        else:
            kept.append(seg)
        if cut:
            for later in segments[i + 1 :]:
                later.unlink()
            break
    return kept


def _load_segment(seg: Segment, interval: int, on_epoch: OnEpoch, epochs_trusted: bool) -> int:
    try:
        seg.load()
    except CorruptIndexError:
        return recover(seg, interval, on_epoch)
    if not epochs_trusted:
        seg.epochs(on_epoch)
    return 0
