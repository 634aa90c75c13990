"""``s2s_ft``: label-smoothed cross-entropy on the target positions s2s-ft predicts (every target
token, or with masked fine-tuning the noised ones, ``extra["loss_mask"]``), normalized by their
count; ``--coverage-loss-weight`` adds See et al.'s coverage loss (Eq. 13).
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

from fairseq_ext.modules.pointer_generator import coverage_loss


@dataclass
class S2SFTCriterionConfig(LabelSmoothedCrossEntropyCriterionConfig):
    coverage_loss_weight: float = field(
        default=0.0,
        metadata={"help": "weight of the coverage loss (See et al. 2017, Eq. 13; the paper: 1.0) added to "
                  "the loss at every predicted position; needs a model with --coverage; 0 = off"},
    )


@register_criterion("s2s_ft", dataclass=S2SFTCriterionConfig)
class S2SFTCriterion(LabelSmoothedCrossEntropyCriterion):
    """Label smoothing (``--label-smoothing``, 0.1 in the paper) on the predicted positions,
    plus the coverage loss (``--coverage-loss-weight``)."""

    def __init__(self, task, sentence_avg, label_smoothing, ignore_prefix_size=0, report_accuracy=False,
                 coverage_loss_weight=0.0):
        super().__init__(task, sentence_avg, label_smoothing, ignore_prefix_size, report_accuracy)
        if coverage_loss_weight < 0:
            raise ValueError(f"--coverage-loss-weight must be >= 0, got {coverage_loss_weight}")
        self.coverage_loss_weight = coverage_loss_weight

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
        coverage = None
        if self.coverage_loss_weight > 0:
            extra = net_output[1]
            if "coverage" not in extra:
                raise ValueError("--coverage-loss-weight needs a model with --coverage (and --copy-heads)")
            per_step = coverage_loss(extra["attn"][0], extra["coverage"])  # (B, T)
            coverage = per_step.masked_fill(target.eq(self.padding_idx), 0.0)
            coverage = coverage.sum() if reduce else coverage
            loss = loss + self.coverage_loss_weight * coverage
        sample_size = sample["target"].size(0) if self.sentence_avg else predicted
        logging_output = {
            "loss": loss.data,
            "nll_loss": nll_loss.data,
            "ntokens": sample["ntokens"],
            "npredicted": predicted,
            "nsentences": sample["target"].size(0),
            "sample_size": sample_size,
        }
        if coverage is not None:
            logging_output["coverage_loss"] = coverage.data
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
        if any("coverage_loss" in log for log in logging_outputs):
            coverage_sum = sum(log.get("coverage_loss", 0) for log in logging_outputs)
            metrics.log_scalar("coverage_loss", coverage_sum / max(npredicted, 1), npredicted, round=3)
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
