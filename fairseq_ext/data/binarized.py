"""Checks of fairseq's binarized splits before fairseq reads them, with errors that name the file
(fairseq fails later, or without naming it, on an empty, truncated or missing file).

fairseq's two index layouts (``fairseq/data/indexed_dataset.py``, 0.12.3)::

    mmap:   MMIDIDX\\0\\0 | version <Q | dtype code <B | N <Q | sizes int32[N] | pointers int64[N]
            PREFIX.bin = pointers[-1] + sizes[-1] * itemsize bytes
    cached: TNTIDX\\0\\0 | version <Q | code, itemsize <QQ | N, S <QQ
            | dim_offsets int64[N + 1] | data_offsets int64[N + 1] | sizes int64[S]
            PREFIX.bin = data_offsets[-1] * itemsize bytes
"""

import itertools
import os
import struct

import numpy as np

from .cleaning import DataError

MMAP_MAGIC = b"MMIDIDX\x00\x00"
CACHED_MAGIC = b"TNTIDX\x00\x00"
MMAP_HEADER = len(MMAP_MAGIC) + 8 + 1 + 8
CACHED_HEADER = len(CACHED_MAGIC) + 8 + 16 + 16
ITEM_SIZES = {1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 8, 7: 8, 8: 2, 9: 4, 10: 8}  # fairseq's dtype codes


class BinarizedDataError(DataError):
    """A binarized split that is missing, empty, truncated or inconsistent (the message names
    the file)."""


def check_binarized(prefix) -> int:
    """Check ``prefix.idx`` and ``prefix.bin``; return the number of examples.

    Raises :class:`FileNotFoundError` when one of the two files is missing and
    :class:`BinarizedDataError` when the split is empty, truncated or not fairseq's format.
    """
    index, data = f"{prefix}.idx", f"{prefix}.bin"
    missing = [path for path in (index, data) if not os.path.isfile(path)]
    if missing:
        present = [path for path in (index, data) if path not in missing]
        beside = f" (beside {present[0]})" if present else ""
        raise FileNotFoundError(f"binarized data file missing: {missing[0]}{beside}")
    with open(index, "rb") as f:
        head = f.read(max(MMAP_HEADER, CACHED_HEADER))
    if head.startswith(MMAP_MAGIC):
        count, expected_index, expected_data = _mmap_layout(index, head)
    elif head.startswith(CACHED_MAGIC):
        count, expected_index, expected_data = _cached_layout(index, head)
    elif not head:
        raise BinarizedDataError(f"{index} is empty (0 bytes): the split has no examples")
    else:
        raise BinarizedDataError(f"{index} is not a fairseq index (starts with {head[:9]!r})")
    index_bytes, data_bytes = os.path.getsize(index), os.path.getsize(data)
    if index_bytes != expected_index:
        raise BinarizedDataError(
            f"{index} has {index_bytes} bytes but its header announces {count} examples "
            f"({expected_index} bytes): the file is truncated or corrupt"
        )
    if count == 0:
        raise BinarizedDataError(f"{index} holds no examples: an empty split (prepare refuses empty files)")
    if data_bytes != expected_data():
        raise BinarizedDataError(
            f"{data} has {data_bytes} bytes but {index} describes {expected_data()}: the .bin is "
            "truncated or the two files come from different binarizations"
        )
    return count


def _mmap_layout(index, head):
    if len(head) < MMAP_HEADER:
        raise BinarizedDataError(f"{index} is truncated: {len(head)} bytes, shorter than its header")
    offset = len(MMAP_MAGIC)
    (version,) = struct.unpack_from("<Q", head, offset)
    (code,) = struct.unpack_from("<B", head, offset + 8)
    (count,) = struct.unpack_from("<Q", head, offset + 9)
    if version != 1 or code not in ITEM_SIZES:
        raise BinarizedDataError(f"{index}: unknown index version {version} or token type {code}")

    def data_bytes():
        sizes = np.fromfile(index, dtype=np.int32, count=count, offset=MMAP_HEADER).astype(np.int64)
        pointers = np.fromfile(index, dtype=np.int64, count=count, offset=MMAP_HEADER + 4 * count)
        ends = np.cumsum(sizes * ITEM_SIZES[code])
        _check_entries(index, sizes, pointers, np.concatenate([[0], ends[:-1]]))
        return int(ends[-1]) if count else 0

    return count, MMAP_HEADER + 12 * count, data_bytes


def _cached_layout(index, head):
    if len(head) < CACHED_HEADER:
        raise BinarizedDataError(f"{index} is truncated: {len(head)} bytes, shorter than its header")
    offset = len(CACHED_MAGIC)
    (version,) = struct.unpack_from("<Q", head, offset)
    _, item_size = struct.unpack_from("<QQ", head, offset + 8)
    count, dims = struct.unpack_from("<QQ", head, offset + 24)
    if version != 1:
        raise BinarizedDataError(f"{index}: unknown index version {version}")

    def data_bytes():
        offsets = np.fromfile(index, dtype=np.int64, count=count + 1, offset=CACHED_HEADER + 8 * (count + 1))
        steps = np.diff(offsets)
        _check_entries(index, steps, offsets[:-1] * item_size, np.concatenate([[0], np.cumsum(steps)[:-1]]) * item_size)
        return int(offsets[-1] * item_size)

    return count, CACHED_HEADER + 16 * (count + 1) + 8 * dims, data_bytes


def _check_entries(index, sizes, pointers, expected_pointers):
    """Every example of ``index`` has a size >= 0 and starts where the one before it ends (so no
    entry points past the end of the ``.bin`` or into another example)."""
    negative = np.flatnonzero(sizes < 0)
    if negative.size:
        raise BinarizedDataError(f"{index}: example {int(negative[0])} has a negative size ({int(sizes[negative[0]])})")
    misplaced = np.flatnonzero(pointers != expected_pointers)
    if misplaced.size:
        i = int(misplaced[0])
        raise BinarizedDataError(
            f"{index}: example {i} starts at byte {int(pointers[i])}, not {int(expected_pointers[i])} where the "
            "examples before it end: the index is corrupt"
        )


def check_pair(source_prefix, target_prefix) -> int:
    """Check both sides of a binarized pair split; return its number of examples."""
    sources, targets = check_binarized(source_prefix), check_binarized(target_prefix)
    if sources != targets:
        raise BinarizedDataError(
            f"{source_prefix}.idx has {sources} examples but {target_prefix}.idx has {targets}: "
            "source and target must be binarized from aligned files"
        )
    return sources


def check_split(data_path, split, src, tgt):
    """Refuse a binarized split that is missing a file, empty, truncated or unaligned, naming the
    file (fairseq 0.12.3 would fail later or without naming it); shards ``split1``, ``split2``,
    ... are checked as fairseq's ``combine`` finds them."""
    for shard in itertools.count():
        name = split + (str(shard) if shard > 0 else "")
        forward, backward = f"{name}.{src}-{tgt}", f"{name}.{tgt}-{src}"
        pair = next((p for p in (forward, backward) if _any_file(os.path.join(data_path, f"{p}.{src}"))), None)
        if pair is None:
            if shard == 0:
                raise FileNotFoundError(
                    f"no binarized {split} split in {data_path}: expected {forward}.{src}.idx/.bin "
                    f"and {forward}.{tgt}.idx/.bin (python -m preprocess.prepare writes them)"
                )
            return
        check_pair(os.path.join(data_path, f"{pair}.{src}"), os.path.join(data_path, f"{pair}.{tgt}"))


def _any_file(prefix):
    return os.path.isfile(prefix + ".idx") or os.path.isfile(prefix + ".bin")
