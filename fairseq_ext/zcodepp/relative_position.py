"""DeBERTa's log-bucketed relative positions (He et al., 2021, DeBERTa-v3; Z-Code++ Section 2.2).

The relative position of query ``i`` and key ``j`` is ``r = i - j``. Distances up to
``mid = buckets // 2`` keep their own bucket; longer ones share buckets on a log scale, so that
``|r| = max_distance - 1`` lands in bucket ``buckets - 1``:

    bucket(r) = r                                                              if |r| <= mid
              = sign(r) * (ceil(log(|r|/mid) / log((max_distance-1)/mid) * (mid-1)) + mid)  otherwise

Index into the relative embedding table (``2 * buckets`` rows) with
``clamp(bucket(r) + buckets, 0, 2 * buckets - 1)``. The buckets depend on ``i - j`` only, so a
shift of every position (left padding, a chunk offset) leaves them unchanged.
"""

import torch


def log_bucket_position(relative, buckets, max_distance):
    """Bucket of each relative position (any integer tensor) -> LongTensor of the same shape."""
    if buckets < 2 or max_distance <= buckets // 2 + 1:
        raise ValueError(
            f"relative position buckets ({buckets}) must be >= 2 and max distance ({max_distance}) "
            f"larger than buckets/2 + 1"
        )
    mid = buckets // 2
    sign = torch.sign(relative)
    distance = relative.abs()
    # log() of distances inside the exact range is never used; clamp keeps it finite
    # float32 throughout, as DeBERTa's code does, so that ceil() picks the same buckets
    log_range = torch.log(torch.tensor((max_distance - 1) / mid, dtype=torch.float32, device=relative.device))
    log_ratio = torch.log(distance.clamp(min=mid).float() / mid) / log_range
    log_bucket = torch.ceil(log_ratio * (mid - 1)).long() + mid
    return torch.where(distance <= mid, relative, sign * log_bucket)


def relative_position_index(length, buckets, max_distance, device=None):
    """``(T, T)`` index into the ``2 * buckets`` relative embeddings for query ``i``, key ``j``.

    Entry ``[i, j]`` is ``clamp(bucket(i - j) + buckets, 0, 2 * buckets - 1)``; the picture for
    ``length = 4`` with no log range (``B = buckets``)::

        B   B-1 B-2 B-3
        B+1 B   B-1 B-2
        B+2 B+1 B   B-1
        B+3 B+2 B+1 B
    """
    # buckets depend on i - j only: bucket the 2T - 1 distances once, then lay them out as a
    # Toeplitz matrix (one T x T allocation instead of several T x T temporaries)
    distances = torch.arange(length - 1, -length, -1, device=device)  # (2T-1,) = T-1 ... -(T-1)
    index = (log_bucket_position(distances, buckets, max_distance) + buckets).clamp(0, 2 * buckets - 1)
    # row i must read distances i - 0, i - 1, ..., i - (T-1), i.e. index[T-1-i :][:T]
    return index.unfold(0, length, 1).flip(0)  # (T, T)
