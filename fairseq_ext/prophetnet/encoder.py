"""The ProphetNet encoder: fairseq's Transformer encoder whose outputs stay one per source under
beam search.

fairseq's beam search expands every encoder tensor to its ``beam`` rows (``(S, B * beam, C)``)
and the decoder's encoder attention then projects keys and values for every row, ``beam``
times the same work. Here :meth:`ProphetNetEncoder.reorder_encoder_out` leaves the tensors one
per source and records which source each row reads (``source_rows``, ``(rows,)``) and which
original sentence each kept source is (``source_ids``, ``(N,)``); sources whose beams have all
finished are dropped. The decoder's encoder attention reads the per-source keys and values
through ``source_rows`` (:func:`fairseq_ext.modules.attention.rows_matmul`). Without a reorder
(training, scoring) the outputs are fairseq's own.
"""

from typing import Dict, List

import torch
from fairseq.models.transformer import TransformerEncoderBase

#: encoder outputs kept one per source, and the dimension that runs over sources
PER_SOURCE = {"encoder_out": 1, "encoder_padding_mask": 0, "encoder_embedding": 0, "encoder_states": 1, "fc_results": 1}
#: encoder outputs kept one per row, reordered with the rows
PER_ROW = ("src_tokens", "src_lengths")


def source_layout(encoder_out: Dict[str, List[torch.Tensor]]):
    """``(rows, ids)`` of a reordered encoder output, ``(None, None)`` before any reorder."""
    if "source_rows" not in encoder_out:
        return None, None
    return encoder_out["source_rows"][0], encoder_out["source_ids"][0]


class ProphetNetEncoder(TransformerEncoderBase):
    """:class:`TransformerEncoderBase` with per-source outputs under beam search (module doc)."""

    def reorder_encoder_out(self, encoder_out: Dict[str, List[torch.Tensor]], new_order):
        rows, ids = source_layout(encoder_out)
        if rows is None:  # the first reorder: rows are the sentences' indices
            rows = new_order
            ids = torch.arange(encoder_out["encoder_out"][0].size(1), device=new_order.device)
        else:
            rows = rows.index_select(0, new_order)
        used = torch.unique(rows)  # (N',) sorted
        out = dict(encoder_out)
        if used.numel() < ids.numel():  # sentences left the batch: drop their sources
            for name, dim in PER_SOURCE.items():
                out[name] = [t.index_select(dim, used) for t in encoder_out.get(name, [])]
            ids = ids.index_select(0, used)
            rows = torch.searchsorted(used, rows)
        for name in PER_ROW:
            out[name] = [t.index_select(0, new_order) for t in encoder_out.get(name, [])]
        out["source_rows"], out["source_ids"] = [rows], [ids]
        return out
