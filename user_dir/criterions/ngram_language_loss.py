"""``ngram_language_loss``: ProphetNet's future n-gram loss (paper section 2.2, eq. 3-4).

``L = sum_j alpha_j * LS-CE(stream j)`` with ``alpha_j = gamma^j / sum_i gamma^i``, each term
fairseq's :func:`label_smoothed_nll_loss` over the stream's targets
(:func:`fairseq_ext.prophetnet.loss.ngram_targets`): with ``--ngram 1`` it is exactly
``label_smoothed_cross_entropy``. Unlike the public code, the later streams' first positions
are excluded (as eq. 3 does) and smoothing is fairseq's ``eps / (V - 1)``.
"""

import math
from dataclasses import dataclass, field

from fairseq import utils
from fairseq.criterions import register_criterion
from fairseq.criterions.label_smoothed_cross_entropy import (
    LabelSmoothedCrossEntropyCriterion,
    LabelSmoothedCrossEntropyCriterionConfig,
    label_smoothed_nll_loss,
)
from fairseq.logging import metrics

from fairseq_ext.prophetnet.loss import ngram_targets, stream_weights


@dataclass
class NgramLanguageLossConfig(LabelSmoothedCrossEntropyCriterionConfig):
    ngram_gamma: float = field(
        default=1.0, metadata={"help": "attenuation coefficient gamma of the stream weights (eq. 4)"}
    )
    disable_ngram_loss: bool = field(
        default=False, metadata={"help": "train on the next token only (stream 1); other streams get weight 0"}
    )


@register_criterion("ngram_language_loss", dataclass=NgramLanguageLossConfig)
class NgramLanguageLossCriterion(LabelSmoothedCrossEntropyCriterion):
    def __init__(self, task, sentence_avg, label_smoothing, ignore_prefix_size=0, report_accuracy=False,
                 ngram_gamma=1.0, disable_ngram_loss=False):
        super().__init__(task, sentence_avg, label_smoothing, ignore_prefix_size, report_accuracy)
        self.ngram_gamma = ngram_gamma
        self.disable_ngram_loss = disable_ngram_loss

    def forward(self, model, sample, reduce=True):
        net_output = model(**sample["net_input"])
        loss, nll_loss, stream_stats = self.compute_ngram_loss(net_output, sample, reduce=reduce)
        sample_size = sample["target"].size(0) if self.sentence_avg else sample["ntokens"]
        logging_output = {
            "loss": loss.data,
            "nll_loss": nll_loss.data,
            "ntokens": sample["ntokens"],
            "nsentences": sample["target"].size(0),
            "sample_size": sample_size,
        }
        for stream, (stream_nll, count) in enumerate(stream_stats, start=1):
            logging_output[f"_stream{stream}_nll"] = stream_nll.data
            logging_output[f"_stream{stream}_tokens"] = count
        if self.report_accuracy:
            n_correct, total = self.compute_accuracy(model, net_output, sample)
            logging_output["n_correct"] = utils.item(n_correct.data)
            logging_output["total"] = utils.item(total.data)
        return loss, sample_size, logging_output

    def compute_ngram_loss(self, net_output, sample, reduce=True):
        """``(loss, next-token nll, [(nll, tokens) per stream])``."""
        extra = net_output[1] if len(net_output) > 1 else None
        if not isinstance(extra, dict) or "ngram_logits" not in extra:
            raise ValueError("ngram_language_loss needs a model whose decoder returns extra['ngram_logits'] "
                             "(--arch prophetnet_summ_*)")
        logits = extra["ngram_logits"]  # (B, n, T, V)
        ngram = logits.size(1)
        # the n-gram targets of the whole target first: stream j at position i sees the main
        # stream up to i - j, which may lie in the prefix; then the prefix positions are dropped
        targets = ngram_targets(sample["target"], ngram, self.padding_idx, sample.get("target_segment_start"))
        if self.ignore_prefix_size > 0:
            logits = logits[:, :, self.ignore_prefix_size:]  # (B, n, T - k, V)
            targets = targets[:, :, self.ignore_prefix_size:]  # (B, n, T - k)
        lprobs = utils.log_softmax(logits, dim=-1)  # (B, n, T, V)
        weights = stream_weights(ngram, self.ngram_gamma, self.disable_ngram_loss)
        loss, next_nll, stats = None, None, []
        for stream, weight in enumerate(weights):
            stream_target = targets[:, stream].reshape(-1)
            stream_loss, stream_nll = label_smoothed_nll_loss(
                lprobs[:, stream].reshape(-1, lprobs.size(-1)), stream_target, self.eps,
                ignore_index=self.padding_idx, reduce=reduce,
            )
            if next_nll is None:
                next_nll = stream_nll
            stats.append((stream_nll.sum(), int(stream_target.ne(self.padding_idx).sum())))
            if weight > 0:
                term = weight * stream_loss if weight != 1.0 else stream_loss
                loss = term if loss is None else loss + term
        return loss, next_nll, stats

    @classmethod
    def reduce_metrics(cls, logging_outputs) -> None:
        super().reduce_metrics(logging_outputs)
        stream = 1
        while any(f"_stream{stream}_nll" in log for log in logging_outputs):
            nll = sum(log.get(f"_stream{stream}_nll", 0) for log in logging_outputs)
            tokens = sum(log.get(f"_stream{stream}_tokens", 0) for log in logging_outputs)
            if tokens > 0:
                metrics.log_scalar(f"nll_stream{stream}", nll / tokens / math.log(2), tokens, round=3)
            stream += 1

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True
