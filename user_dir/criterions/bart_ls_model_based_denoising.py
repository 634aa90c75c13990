"""``bart_ls_model_based_denoising``: the loss of BART-LS model-based denoising. The criterion's
encoder-only scorer (:class:`~fairseq_ext.bart_ls.model_based.MaskedSpanScorer`) predicts the
masked candidates; the ``--hard-span-fraction`` of spans with the highest loss become the
text-to-text example (label-smoothed cross-entropy); unless ``--freeze-scorer`` the scorer's
own loss (times ``--scorer-weight``) trains it jointly.
"""

import logging
import math
from dataclasses import dataclass, field
from typing import Optional

import torch
from fairseq import utils
from fairseq.criterions import FairseqCriterion, register_criterion
from fairseq.criterions.label_smoothed_cross_entropy import (
    LabelSmoothedCrossEntropyCriterionConfig,
    label_smoothed_nll_loss,
)
from fairseq.data.language_pair_dataset import collate
from fairseq.logging import metrics

from fairseq_ext.bart_ls.model_based import MaskedSpanScorer, scorer_mask_input, select_hardest_spans
from fairseq_ext.compat.checkpoint import safe_load
from fairseq_ext.noising.spans import corrupt_spans

logger = logging.getLogger(__name__)


@dataclass
class ModelBasedDenoisingCriterionConfig(LabelSmoothedCrossEntropyCriterionConfig):
    hard_span_fraction: float = field(
        default=0.2, metadata={"help": "fraction of candidate spans (the hardest) kept as targets"}
    )
    freeze_scorer: bool = field(
        default=False, metadata={"help": "do not train the scorer (load it with --scorer-path)"}
    )
    scorer_path: Optional[str] = field(default=None, metadata={"help": "state dict of a trained scorer to start from"})
    scorer_weight: float = field(default=1.0, metadata={"help": "weight of the scorer's masked-LM loss"})
    scorer_layers: int = field(default=2, metadata={"help": "scorer encoder layers"})
    scorer_embed_dim: int = field(default=256, metadata={"help": "scorer width"})
    scorer_heads: int = field(default=4, metadata={"help": "scorer attention heads"})
    scorer_ffn_dim: int = field(default=1024, metadata={"help": "scorer feed-forward width"})
    scorer_block_size: int = field(default=1024, metadata={"help": "scorer attention block size"})


@register_criterion("bart_ls_model_based_denoising", dataclass=ModelBasedDenoisingCriterionConfig)
class ModelBasedDenoisingCriterion(FairseqCriterion):
    def __init__(self, task, sentence_avg, label_smoothing, hard_span_fraction, freeze_scorer, scorer_path,
                 scorer_weight, scorer_layers, scorer_embed_dim, scorer_heads, scorer_ffn_dim, scorer_block_size,
                 ignore_prefix_size=0, report_accuracy=False):
        super().__init__(task)
        self.sentence_avg = sentence_avg
        self.eps = label_smoothing
        self.hard_span_fraction = hard_span_fraction
        self.freeze_scorer = freeze_scorer
        self.scorer_weight = scorer_weight
        dictionary = task.source_dictionary
        self.scorer = MaskedSpanScorer(
            len(dictionary), dictionary.pad(), scorer_embed_dim, scorer_layers, scorer_heads, scorer_ffn_dim,
            scorer_block_size, task.cfg.tokens_per_sample,
        )
        if scorer_path:
            self.scorer.load_state_dict(safe_load(scorer_path))
        if freeze_scorer:
            self.scorer.requires_grad_(False)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Resume the scorer from a checkpoint; a checkpoint without criterion state (a
        converted BART, a long-denoising run) keeps the fresh or ``--scorer-path`` scorer."""
        if state_dict is None:
            logger.info("the checkpoint holds no scorer: keeping the scorer built at start")
            return None
        return super().load_state_dict(state_dict, strict=strict, assign=assign)

    def build_text_to_text_batch(self, tokens, selected):
        """Corrupt the selected spans of every row into a collated seq2seq batch on ``tokens``'s
        device (fairseq's ``collate`` sorts by lengths it builds on the CPU, so it gets CPU rows)."""
        dictionary = self.task.source_dictionary
        device = tokens.device
        tokens, selected = tokens.cpu(), selected.cpu()
        sentinels = torch.as_tensor(self.task.sentinel_ids)
        real = tokens.ne(dictionary.pad())
        samples = []
        for row in range(tokens.size(0)):
            source, target = corrupt_spans(
                tokens[row][real[row]], selected[row][real[row]], sentinels, dictionary.eos(), bos=dictionary.bos()
            )
            samples.append({"id": row, "source": source, "target": target})
        batch = collate(samples, dictionary.pad(), dictionary.eos(), left_pad_source=True, left_pad_target=False)
        return utils.apply_to_sample(lambda t: t.to(device), batch)

    def forward(self, model, sample, reduce=True):
        tokens, candidates = sample["tokens"], sample["candidates"]  # (B, T), (B, T)
        if self.freeze_scorer:
            self.scorer.eval()
        scorer_lprobs = utils.log_softmax(
            self.scorer(scorer_mask_input(tokens, candidates, self.scorer.mask_idx)), dim=-1
        )  # (B, T, V + 1)
        token_nll = -scorer_lprobs.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)  # (B, T)
        selected = select_hardest_spans(token_nll.detach(), candidates, self.hard_span_fraction)  # (B, T)

        batch = self.build_text_to_text_batch(tokens, selected)
        net_output = model(**batch["net_input"])
        lprobs = model.get_normalized_probs(net_output, log_probs=True)  # (B, U, V)
        target = batch["target"]  # (B, U)
        loss, nll_loss = label_smoothed_nll_loss(
            lprobs.view(-1, lprobs.size(-1)), target.view(-1), self.eps,
            ignore_index=self.padding_idx, reduce=reduce,
        )
        sample_size = batch["nsentences"] if self.sentence_avg else batch["ntokens"]
        n_candidates = int(candidates.sum())
        scorer_loss = token_nll[candidates].sum()
        if not self.freeze_scorer:
            # the mean candidate NLL once fairseq divides the loss by sample_size
            loss = loss + self.scorer_weight * scorer_loss * sample_size / max(n_candidates, 1)
        logging_output = {
            "loss": loss.data,
            "nll_loss": nll_loss.data,
            "scorer_loss": scorer_loss.data,
            "candidate_tokens": n_candidates,
            "selected_tokens": int(selected.sum()),
            "ntokens": batch["ntokens"],
            "nsentences": batch["nsentences"],
            "sample_size": sample_size,
        }
        return loss, sample_size, logging_output

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        total = lambda key: sum(log.get(key, 0) for log in logging_outputs)  # noqa: E731
        sample_size, ntokens, candidates = total("sample_size"), total("ntokens"), total("candidate_tokens")
        metrics.log_scalar("loss", total("loss") / sample_size / math.log(2), sample_size, round=3)
        metrics.log_scalar("nll_loss", total("nll_loss") / ntokens / math.log(2), ntokens, round=3)
        metrics.log_derived("ppl", lambda meters: utils.get_perplexity(meters["nll_loss"].avg))
        if candidates:
            metrics.log_scalar("scorer_loss", total("scorer_loss") / candidates / math.log(2), candidates, round=3)
            metrics.log_scalar("selected_fraction", total("selected_tokens") / candidates, candidates, round=3)

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True
