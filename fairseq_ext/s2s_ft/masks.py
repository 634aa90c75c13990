"""Seq2seq self-attention masks of s2s-ft (Figure 2 of the paper), as pure functions.

Every mask is a boolean ``(rows, columns)`` tensor where ``True`` means "this query row may
attend to this key column". Padding is not drawn here: it is a separate per-example key mask
(``key_padding_mask``) combined by the caller, so that one structural mask is shared by the
whole batch. All functions are vectorized (no loop over positions) and build on ``device``.
"""

import torch

SOURCE, TARGET, PSEUDO = 0, 1, 2


def seq2seq_attention_mask(num_source: int, num_target: int, device=None) -> torch.Tensor:
    """Figure 2(a)/(b): causal and masked fine-tuning over ``[source; target]``.

    Source rows see every source column and no target column; target row ``i`` sees the whole
    source and targets ``0..i`` (itself included). With 3 source and 2 target tokens::

                s1 s2 s3 t1 t2
            s1 [ 1  1  1  0  0 ]
            s2 [ 1  1  1  0  0 ]
            s3 [ 1  1  1  0  0 ]
            t1 [ 1  1  1  1  0 ]
            t2 [ 1  1  1  1  1 ]

    Returns a ``(S+T, S+T)`` bool tensor.
    """
    total = num_source + num_target
    row = torch.arange(total, device=device)[:, None]  # (S+T, 1)
    col = torch.arange(total, device=device)[None, :]  # (1, S+T)
    return (col < num_source) | ((row >= num_source) & (col <= row))  # (S+T, S+T)


def _segments(num_source: int, num_target: int, device=None):
    """Kind (SOURCE/TARGET/PSEUDO) and target step of each slot of ``[src; tgt; pseudo]``."""
    index = torch.arange(num_source + 2 * num_target, device=device)
    kind = torch.full_like(index, SOURCE)
    kind[num_source:] = TARGET
    kind[num_source + num_target :] = PSEUDO
    step = torch.where(kind == PSEUDO, index - num_source - num_target, index - num_source)
    return index, kind, step


def pseudo_masked_attention_mask(num_source: int, num_target: int, device=None) -> torch.Tensor:
    """Figure 2(c): pseudo-masked fine-tuning over ``[source; target; pseudo]``.

    ``pseudo_i`` ([P]) shares the position id of ``target_i`` and predicts it. Source rows see
    the source only; ``target_i`` sees the source and ``target_0..i``; ``pseudo_i`` sees the
    source, ``target_0..i-1`` and itself. No row but its own sees a pseudo token, so later steps
    read the original target token, not its [P]. With 2 source and 3 target tokens::

                s1 s2 t1 t2 t3 p1 p2 p3
            s1 [ 1  1  0  0  0  0  0  0 ]
            s2 [ 1  1  0  0  0  0  0  0 ]
            t1 [ 1  1  1  0  0  0  0  0 ]
            t2 [ 1  1  1  1  0  0  0  0 ]
            t3 [ 1  1  1  1  1  0  0  0 ]
            p1 [ 1  1  0  0  0  1  0  0 ]
            p2 [ 1  1  1  0  0  0  1  0 ]
            p3 [ 1  1  1  1  0  0  0  1 ]

    Returns a ``(S+2T, S+2T)`` bool tensor.
    """
    index, kind, step = _segments(num_source, num_target, device)
    row_kind, col_kind = kind[:, None], kind[None, :]
    row_step, col_step = step[:, None], step[None, :]
    sees_source = col_kind == SOURCE
    # a target row sees targets up to itself, a pseudo row the targets strictly before it
    sees_target = (row_kind != SOURCE) & (col_kind == TARGET) & (col_step < row_step + (row_kind == TARGET))
    sees_itself = (row_kind == PSEUDO) & (index[:, None] == index[None, :])
    return sees_source | sees_target | sees_itself  # (S+2T, S+2T)


def decode_step_mask(num_prefix: int, with_context_row: bool, device=None) -> torch.Tensor:
    """One cached decoding step of masked / pseudo-masked fine-tuning.

    The keys are ``[prefix; (new target row); [P]]`` where the prefix is the cached source and
    committed targets. The new target row (the token chosen at the previous step) sees the
    prefix and itself, not the [P]; the [P] row sees everything and predicts the next token.
    These are the rows ``target_{k-1}`` and ``pseudo_k`` of :func:`pseudo_masked_attention_mask`
    restricted to the columns that exist at step ``k``. With a prefix of 3::

                 c1 c2 c3 t  P
            t  [ 1  1  1  1  0 ]
            P  [ 1  1  1  1  1 ]

    Without a context row (the first step) it is the single row ``[1 1 1 1]``.
    Returns a ``(rows, num_prefix + rows)`` bool tensor.
    """
    rows = 2 if with_context_row else 1
    mask = torch.ones(rows, num_prefix + rows, dtype=torch.bool, device=device)
    if with_context_row:
        mask[0, -1] = False
    return mask  # (rows, P + rows)
