"""``transformer_sm`` criterion: the two training objectives of Transformer-SM (paper Sec. 3).

* ``--mode dat`` (Eq. 4): next-token loss on the article tokens (``<delim>`` never a target),
  the summary tokens and the end token;
* ``--mode ett`` (Eq. 5): the summary tokens and the end token only.

``--mode ett --dat-epochs K`` runs the paper's schedule in one call (DAT for epochs 1..K).
``summary_nll_loss`` is logged in both modes, to compare runs and pick checkpoints.
"""

import logging
import math
from dataclasses import dataclass, field

from fairseq import utils
from fairseq.criterions import register_criterion
from fairseq.criterions.label_smoothed_cross_entropy import (
    LabelSmoothedCrossEntropyCriterion,
    LabelSmoothedCrossEntropyCriterionConfig,
    label_smoothed_nll_loss,
)
from fairseq.dataclass import ChoiceEnum
from fairseq.logging import metrics

from fairseq_ext.transformer_sm import article_targets

from ..interfaces import JointRowTask

logger = logging.getLogger(__name__)

TRAINING_MODES = ChoiceEnum(["dat", "ett"])


@dataclass
class TransformerSMCriterionConfig(LabelSmoothedCrossEntropyCriterionConfig):
    mode: TRAINING_MODES = field(
        default="ett",
        metadata={"help": "dat: loss on article and summary tokens (domain-adaptive training); "
                  "ett: loss on summary tokens only (end-task training)"},
    )
    dat_epochs: int = field(
        default=0,
        metadata={"help": "with --mode ett: use the DAT loss for the first N epochs, then ETT "
                  "(the paper's schedule, 10 + 10 epochs, in one run)"},
    )


@register_criterion("transformer_sm", dataclass=TransformerSMCriterionConfig)
class TransformerSMCriterion(LabelSmoothedCrossEntropyCriterion):
    def __init__(self, task, sentence_avg, label_smoothing, mode="ett", dat_epochs=0, ignore_prefix_size=0,
                 report_accuracy=False):
        super().__init__(task, sentence_avg, label_smoothing, ignore_prefix_size, report_accuracy)
        if not isinstance(task, JointRowTask):
            raise ValueError(f"the transformer_sm criterion needs the transformer_sm task, got {type(task).__name__}")
        if dat_epochs < 0 or (dat_epochs and mode == "dat"):
            raise ValueError("--dat-epochs N (N >= 0) schedules DAT before ETT and goes with --mode ett")
        self.mode = mode
        self.dat_epochs = dat_epochs
        self._announced = None

    def domain_adaptive(self):
        """Whether the current epoch trains with the DAT loss."""
        dat = self.mode == "dat" or self.task.epoch <= self.dat_epochs
        if dat != self._announced:
            loss = "DAT (article and summary)" if dat else "ETT (summary only)"
            logger.info(f"transformer_sm criterion: {loss} loss")
            self._announced = dat
        return dat

    def forward(self, model, sample, reduce=True):
        domain_adaptive = self.domain_adaptive()
        net_output = model(**sample["net_input"], article_logits=domain_adaptive)
        summary_loss, summary_nll = self.compute_loss(model, net_output, sample, reduce=reduce)
        loss, nll_loss, ntokens = summary_loss, summary_nll, sample["ntokens"]
        if domain_adaptive:
            article_loss, article_nll, article_ntokens = self.compute_article_loss(model, net_output, sample, reduce)
            loss, nll_loss = loss + article_loss, nll_loss + article_nll
            ntokens += article_ntokens
        sample_size = sample["target"].size(0) if self.sentence_avg else ntokens
        logging_output = {
            "loss": loss.data,
            "nll_loss": nll_loss.data,
            "summary_nll_loss": summary_nll.data,
            "summary_ntokens": sample["ntokens"],
            "ntokens": ntokens,
            "nsentences": sample["target"].size(0),
            "sample_size": sample_size,
        }
        if self.report_accuracy:
            n_correct, total = self.compute_accuracy(model, net_output, sample)
            logging_output["n_correct"] = utils.item(n_correct.data)
            logging_output["total"] = utils.item(total.data)
        return loss, sample_size, logging_output

    def compute_article_loss(self, model, net_output, sample, reduce=True):
        """Label-smoothed next-token loss over the article positions; ``(loss, nll, count)``."""
        logits = net_output[1]["article_logits"]  # (B, M, V)
        lprobs = model.get_normalized_probs((logits, None), log_probs=True)  # (B, M, V)
        target = article_targets(sample["net_input"]["src_tokens"], self.padding_idx)  # (B, M)
        loss, nll_loss = label_smoothed_nll_loss(
            lprobs.view(-1, lprobs.size(-1)), target.view(-1), self.eps, ignore_index=self.padding_idx, reduce=reduce
        )
        return loss, nll_loss, int(target.ne(self.padding_idx).sum())

    @classmethod
    def reduce_metrics(cls, logging_outputs) -> None:
        super().reduce_metrics(logging_outputs)
        summary_nll = sum(log.get("summary_nll_loss", 0) for log in logging_outputs)
        summary_ntokens = sum(log.get("summary_ntokens", 0) for log in logging_outputs)
        if summary_ntokens > 0:
            metrics.log_scalar(
                "summary_nll_loss", summary_nll / summary_ntokens / math.log(2), summary_ntokens, round=3
            )

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True
