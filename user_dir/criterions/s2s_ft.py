"""``s2s_ft``: label-smoothed cross-entropy on the target positions s2s-ft predicts.

Causal and pseudo-masked fine-tuning predict every target token; masked fine-tuning only the
noised ones (the model returns them as ``extra["loss_mask"]``). The loss is fairseq's
``label_smoothed_nll_loss`` over those positions, normalized by their count (``sample_size``).
The criterion passes ``target`` to the model, which masked fine-tuning needs.
"""

import math
from dataclasses import dataclass

from fairseq import metrics, utils
from fairseq.criterions import register_criterion
from fairseq.criterions.label_smoothed_cross_entropy import (
    LabelSmoothedCrossEntropyCriterion,
    LabelSmoothedCrossEntropyCriterionConfig,
    label_smoothed_nll_loss,
)


@dataclass
class S2SFTCriterionConfig(LabelSmoothedCrossEntropyCriterionConfig):
    pass


@register_criterion("s2s_ft", dataclass=S2SFTCriterionConfig)
class S2SFTCriterion(LabelSmoothedCrossEntropyCriterion):
    """Label smoothing (``--label-smoothing``, 0.1 in the paper) on the predicted positions."""

    def forward(self, model, sample, reduce=True):
        net_output = model(**sample["net_input"], target=sample["target"])
        lprobs = model.get_normalized_probs(net_output, log_probs=True)  # (B, T, V)
        target = model.get_targets(sample, net_output)  # (B, T)
        loss_mask = net_output[1].get("loss_mask")
        if loss_mask is not None:
            target = target.masked_fill(~loss_mask, self.padding_idx)
        loss, nll_loss = label_smoothed_nll_loss(
            lprobs.view(-1, lprobs.size(-1)), target.view(-1), self.eps, ignore_index=self.padding_idx, reduce=reduce
        )
        predicted = int(target.ne(self.padding_idx).sum())
        sample_size = sample["target"].size(0) if self.sentence_avg else predicted
        logging_output = {
            "loss": loss.data,
            "nll_loss": nll_loss.data,
            "ntokens": sample["ntokens"],
            "npredicted": predicted,
            "nsentences": sample["target"].size(0),
            "sample_size": sample_size,
        }
        if self.report_accuracy:
            keep = target.ne(self.padding_idx)
            logging_output["n_correct"] = int(lprobs.argmax(-1).eq(target).masked_select(keep).sum())
            logging_output["total"] = predicted
        return loss, sample_size, logging_output

    @classmethod
    def reduce_metrics(cls, logging_outputs) -> None:
        loss_sum = sum(log.get("loss", 0) for log in logging_outputs)
        nll_loss_sum = sum(log.get("nll_loss", 0) for log in logging_outputs)
        npredicted = sum(log.get("npredicted", 0) for log in logging_outputs)
        sample_size = sum(log.get("sample_size", 0) for log in logging_outputs)
        metrics.log_scalar("loss", loss_sum / max(sample_size, 1) / math.log(2), sample_size, round=3)
        metrics.log_scalar("nll_loss", nll_loss_sum / max(npredicted, 1) / math.log(2), npredicted, round=3)
        metrics.log_derived("ppl", lambda meters: utils.get_perplexity(meters["nll_loss"].avg))
        total = utils.item(sum(log.get("total", 0) for log in logging_outputs))
        if total > 0:
            metrics.log_scalar("total", total)
            metrics.log_scalar("n_correct", utils.item(sum(log.get("n_correct", 0) for log in logging_outputs)))
            metrics.log_derived(
                "accuracy",
                lambda meters: round(meters["n_correct"].sum * 100.0 / meters["total"].sum, 3)
                if meters["total"].sum > 0
                else float("nan"),
            )

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True
