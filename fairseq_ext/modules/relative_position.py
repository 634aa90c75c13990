"""Relative-position buckets: exact for short distances, log-spaced beyond, and their biases.

* :func:`t5_relative_bucket` (T5, unidirectional; ProphetNet's decoder, section 2.3): distance
  ``max(i - j, 0)``, one bucket each below ``num_buckets // 2``, log-spaced up to
  ``max_distance``, the last bucket beyond; the bias is a per-query table gathered by bucket
  (:func:`gather_relative_bias`)::

      distance:  0 1 2 ... 15 | 16 ... 22 | 23 ... 31 | ... | >= 128
      bucket:    0 1 2 ... 15 | 16        | 17 ...    | ... | 31        (32 buckets, max 128)

* :func:`deberta_log_bucket` (DeBERTa-v3; Z-Code++ section 2.2): signed ``r = i - j``::

      bucket(r) = r                                                              if |r| <= mid
                = sign(r) * (ceil(log(|r|/mid) / log((max_distance-1)/mid) * (mid-1)) + mid)  otherwise

  :func:`deberta_relative_index` lays them out as the ``(T, T)`` index into ``2 * buckets`` rows.

Each rounds (T5 floors, DeBERTa takes the ceiling) and takes the log (double, fp32) as its
released code does, so the buckets match it at every boundary.
"""

import math

import torch


def _log_fraction(distance, exact, log_span):
    """``log(distance / exact) / log_span`` in fp32; distances inside the exact range are
    clamped to ``exact`` first (their value is never used; the clamp keeps the log finite)."""
    return torch.log(distance.clamp(min=exact).float() / exact) / log_span


def t5_relative_bucket(distance, num_buckets, max_distance):
    """Bucket index (long, same shape) of integer ``distance`` values (query minus key).

    Negative distances (keys after the query) are clamped to 0, as in the unidirectional
    scheme of the public ProphetNet code.
    """
    if num_buckets < 2:
        raise ValueError(f"num_buckets must be at least 2, got {num_buckets}")
    max_exact = num_buckets // 2
    if max_distance <= max_exact:
        raise ValueError(f"relative max distance {max_distance} must exceed num_buckets // 2 = {max_exact}")
    distance = distance.clamp(min=0)
    scaled = _log_fraction(distance, max_exact, math.log(max_distance / max_exact))
    large = (max_exact + scaled * (num_buckets - max_exact)).long().clamp(max=num_buckets - 1)
    return torch.where(distance < max_exact, distance, large).long()


def gather_relative_bias(table, buckets, num_heads):
    """Per-query relative bias picked by bucket.

    Args:
        table: ``(B, Q, num_buckets * heads)``, the output of the relative linear layer,
            laid out bucket-major (``feature = bucket * heads + head``) like the public code.
        buckets: ``(Q, K)`` long bucket index of every (query row, key) pair.
        num_heads: number of attention heads.

    Returns:
        ``(B, heads, Q, K)`` bias to add to the attention scores.
    """
    bsz, num_rows, features = table.shape
    num_buckets = features // num_heads
    table = table.view(bsz, num_rows, num_buckets, num_heads).permute(0, 3, 1, 2)  # (B, H, Q, buckets)
    index = buckets.unsqueeze(0).unsqueeze(0).expand(bsz, num_heads, -1, -1)  # (B, H, Q, K)
    return torch.gather(table, dim=-1, index=index)  # (B, H, Q, K)


def deberta_log_bucket(relative, buckets, max_distance):
    """Bucket of each relative position (any integer tensor) -> LongTensor of the same shape."""
    if buckets < 2 or max_distance <= buckets // 2 + 1:
        raise ValueError(
            f"relative position buckets ({buckets}) must be >= 2 and max distance ({max_distance}) "
            f"larger than buckets/2 + 1"
        )
    mid = buckets // 2
    distance = relative.abs()
    # the log of the range in fp32, as DeBERTa's code does, so that ceil() picks the same buckets
    log_span = torch.log(torch.tensor((max_distance - 1) / mid, dtype=torch.float32, device=relative.device))
    log_bucket = torch.ceil(_log_fraction(distance, mid, log_span) * (mid - 1)).long() + mid
    return torch.where(distance <= mid, relative, torch.sign(relative) * log_bucket)


def deberta_distance_index(length, buckets, max_distance, device=None):
    """``(2T - 1,)`` table row of every relative distance ``T-1, T-2, ..., -(T-1)`` (entry ``k``
    is distance ``r = T - 1 - k``): ``clamp(bucket(r) + buckets, 0, 2 * buckets - 1)``.

    Linear in ``T``; :func:`relative_index_rows` lays any band of query rows out from it. Rows
    are non-increasing in ``k`` (buckets are monotone in the distance).
    """
    distances = torch.arange(length - 1, -length, -1, device=device)  # (2T-1,) = T-1 ... -(T-1)
    return (deberta_log_bucket(distances, buckets, max_distance) + buckets).clamp(0, 2 * buckets - 1)


def relative_index_rows(distance_index, start, end):
    """Rows ``[start, end)`` of the ``(T, T)`` relative index, from :func:`deberta_distance_index`.

    Row ``i`` reads distances ``i - 0, i - 1, ..., i - (T-1)``, i.e. ``distance_index[T-1-i :][:T]``::

        distance_index:  k = 0 .. 2T-2   (r = T-1 ... -(T-1))
        row i         =  distance_index[T-1-i : 2T-1-i]

    Returns ``(end - start, T)`` (one copy of ``(end - start) x T`` entries).
    """
    length = (distance_index.numel() + 1) // 2
    windows = distance_index.unfold(0, length, 1)  # (T, T) view: windows[m] = distance_index[m : m+T]
    return windows[length - end: length - start].flip(0)  # (end-start, T), row i = windows[T-1-i]


def relative_band(distance_index, start, end):
    """``(lo, hi)``: the smallest and largest table rows that query rows ``[start, end)`` read
    over all ``T`` keys. Their distances ``i - j`` lie in ``[start - (T-1), end - 1]``, a
    contiguous band of ``distance_index`` (``k`` from ``T - end`` to ``2T - 2 - start``)."""
    length = (distance_index.numel() + 1) // 2
    band = distance_index[length - end: 2 * length - 1 - start]  # (end-start + T-1,)
    return int(band.min()), int(band.max())


def deberta_relative_index(length, buckets, max_distance, device=None):
    """``(T, T)`` index into the ``2 * buckets`` relative embeddings for query ``i``, key ``j``.

    Entry ``[i, j]`` is ``clamp(bucket(i - j) + buckets, 0, 2 * buckets - 1)``; the picture for
    ``length = 4`` with no log range (``B = buckets``)::

        B   B-1 B-2 B-3
        B+1 B   B-1 B-2
        B+2 B+1 B   B-1
        B+3 B+2 B+1 B

    The buckets depend on ``i - j`` only, so a shift of every position (left padding, a chunk
    offset) leaves them unchanged. Quadratic in ``T``; long inputs read bands of rows instead
    (:func:`relative_index_rows`).
    """
    # bucket the 2T - 1 distances once, then lay them out as a Toeplitz matrix (one T x T
    # allocation instead of several T x T temporaries)
    return relative_index_rows(deberta_distance_index(length, buckets, max_distance, device), 0, length)  # (T, T)
