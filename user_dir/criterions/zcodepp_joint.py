"""``zcodepp_joint``: Z-Code++'s phase-one loss, lambda1 * MLM + lambda2 * RTD + lambda3 * CSP
(Section 2.1; defaults 1 / 30 / 1). The generator predicts the masked tokens (MLM), the encoder
labels every token replaced or not from the generator's samples (RTD; a sample equal to the
original is not replaced, as in ELECTRA), the encoder-decoder predicts the corrupted spans
(CSP). Each is a mean over its own tokens, logged separately in base 2.
"""

import math
from dataclasses import dataclass, field

import torch.nn.functional as F
from fairseq import utils
from fairseq.criterions import FairseqCriterion, register_criterion
from fairseq.criterions.label_smoothed_cross_entropy import label_smoothed_nll_loss
from fairseq.dataclass import FairseqDataclass
from fairseq.logging import metrics

from fairseq_ext.noising.replaced_tokens import sample_replacements

from ..interfaces import ReplacedTokenDetectionTask


@dataclass
class ZCodeppJointConfig(FairseqDataclass):
    mlm_weight: float = field(default=1.0, metadata={"help": "lambda1: weight of the generator's MLM loss"})
    rtd_weight: float = field(default=30.0, metadata={"help": "lambda2: weight of the RTD loss (DeBERTa-v3 uses 10)"})
    csp_weight: float = field(default=1.0, metadata={"help": "lambda3: weight of the corrupted-span loss"})
    label_smoothing: float = field(default=0.0, metadata={"help": "label smoothing of the CSP loss"})
    sampling_temperature: float = field(
        default=1.0, metadata={"help": "temperature of the generator's softmax when sampling replacements"}
    )


@register_criterion("zcodepp_joint", dataclass=ZCodeppJointConfig)
class ZCodeppJointCriterion(FairseqCriterion):
    def __init__(self, task, mlm_weight, rtd_weight, csp_weight, label_smoothing, sampling_temperature):
        super().__init__(task)
        if not isinstance(task, ReplacedTokenDetectionTask):
            raise ValueError(f"zcodepp_joint needs --task zcodepp_pretraining (MLM/RTD/CSP samples), "
                             f"got {type(task).__name__}")
        self.mlm_weight = mlm_weight
        self.rtd_weight = rtd_weight
        self.csp_weight = csp_weight
        self.eps = label_smoothing
        self.temperature = sampling_temperature
        self.blocked_ids = task.special_ids

    def mlm_rtd(self, model, pretraining):
        """``(mlm_loss_sum, n_masked, rtd_loss_sum, n_tokens, n_correct, n_replaced)``."""
        original, masked = pretraining["original"], pretraining["masked"]  # (B, T)
        gen_logits = model.generator_logits(pretraining["mlm_source"], masked)  # (M, V)
        mlm_loss = F.cross_entropy(gen_logits.float(), original[masked], reduction="sum")

        replaced_input = original.clone()
        replaced_input[masked] = sample_replacements(gen_logits, self.temperature, self.blocked_ids)
        replaced = replaced_input.ne(original)  # (B, T)
        real = original.ne(self.padding_idx)  # (B, T)
        rtd_logits = model.discriminator_logits(replaced_input)[real]  # (N,)
        labels = replaced[real].float()  # (N,)
        rtd_loss = F.binary_cross_entropy_with_logits(rtd_logits.float(), labels, reduction="sum")
        correct = (rtd_logits > 0).eq(replaced[real]).sum()
        return mlm_loss, int(masked.sum()), rtd_loss, int(real.sum()), correct, replaced.sum()

    def csp(self, model, sample):
        """``(loss_sum, nll_sum, n_target_tokens)`` of the corrupted-span prediction."""
        net_output = model(**sample["net_input"])
        lprobs = model.get_normalized_probs(net_output, log_probs=True)  # (B, U, V)
        target = model.get_targets(sample, net_output)  # (B, U)
        loss, nll = label_smoothed_nll_loss(
            lprobs.view(-1, lprobs.size(-1)), target.view(-1), self.eps, ignore_index=self.padding_idx, reduce=True
        )
        return loss, nll, int(target.ne(self.padding_idx).sum())

    def forward(self, model, sample, reduce=True):
        mlm_loss, n_masked, rtd_loss, n_real, correct, n_replaced = self.mlm_rtd(model, sample["pretraining"])
        csp_loss, csp_nll, n_target = self.csp(model, sample)
        loss = (
            self.mlm_weight * mlm_loss / max(n_masked, 1)
            + self.rtd_weight * rtd_loss / max(n_real, 1)
            + self.csp_weight * csp_loss / max(n_target, 1)
        )
        sample_size = 1  # each term is already a mean over its own tokens
        logging_output = {
            "loss": loss.data,
            "mlm_loss": mlm_loss.data, "mlm_tokens": n_masked,
            "rtd_loss": rtd_loss.data, "rtd_tokens": n_real, "rtd_correct": correct.data,
            "rtd_replaced": n_replaced.data,
            "csp_loss": csp_loss.data, "csp_nll_loss": csp_nll.data,
            "ntokens": n_target, "nsentences": sample["nsentences"], "sample_size": sample_size,
        }
        return loss, sample_size, logging_output

    @staticmethod
    def reduce_metrics(logging_outputs) -> None:
        def total(key):
            return sum(log.get(key, 0) for log in logging_outputs)

        sample_size = total("sample_size")
        metrics.log_scalar("loss", total("loss") / max(sample_size, 1), sample_size, round=3)
        for name, count_key in (("mlm_loss", "mlm_tokens"), ("rtd_loss", "rtd_tokens"),
                                ("csp_loss", "ntokens"), ("csp_nll_loss", "ntokens")):
            count = total(count_key)
            metrics.log_scalar(name, total(name) / max(count, 1) / math.log(2), count, round=3)
        rtd_tokens = total("rtd_tokens")
        metrics.log_scalar("rtd_accuracy", 100.0 * total("rtd_correct") / max(rtd_tokens, 1), rtd_tokens, round=2)
        metrics.log_scalar("rtd_replaced", 100.0 * total("rtd_replaced") / max(rtd_tokens, 1), rtd_tokens, round=2)
        metrics.log_derived("ppl", lambda meters: utils.get_perplexity(meters["csp_nll_loss"].avg))

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True
