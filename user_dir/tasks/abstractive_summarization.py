"""``abstractive_summarization``: document -> summary on fairseq binarized data.

The data directory is what ``python -m preprocess.prepare`` writes to ``OUT/bin``: a
``source``/``target`` pair binarized with one joined dictionary and the sentencepiece model
``spm.model`` beside it. On top of :class:`~fairseq.tasks.translation.TranslationTask` it
adds counted truncation of long sources (and targets), an optional instruction prefix
(grounded pre-training), and ROUGE on the validation set during training, usable as
``--best-checkpoint-metric rougeL --maximize-best-checkpoint-metric``.
"""

import json
import logging
import os
from argparse import Namespace
from dataclasses import dataclass, field
from typing import Optional

import torch
from fairseq import utils
from fairseq.data import LanguagePairDataset, ListDataset, encoders
from fairseq.logging import metrics
from fairseq.tasks import register_task
from fairseq.tasks.translation import TranslationConfig, TranslationTask, load_langpair_dataset
from omegaconf import II

from fairseq_ext.fairseq_fixes import fix_ngram_blocking
from fairseq_ext.summarization_data import PrefixTruncateDataset, count_overlong

from ._batch_seed import BatchSeededTrainStep

logger = logging.getLogger(__name__)

ROUGE_KEYS = ("rouge1", "rouge2", "rougeL")


@dataclass
class AbstractiveSummarizationConfig(TranslationConfig):
    source_lang: Optional[str] = field(
        default="source", metadata={"help": "source suffix of the binarized files", "argparse_alias": "-s"}
    )
    target_lang: Optional[str] = field(
        default="target", metadata={"help": "target suffix of the binarized files", "argparse_alias": "-t"}
    )
    truncate_source: bool = field(
        default=True,
        metadata={"help": "truncate sources to --max-source-positions (counted in the log); "
                  "when off, over-long sources are left to fairseq's size filter"},
    )
    truncate_target: bool = field(
        default=True,
        metadata={"help": "truncate training targets to --max-target-positions (counted in the log)"},
    )
    instruction: Optional[str] = field(
        default=None,
        metadata={"help": "natural-language instruction put before every source, "
                  "encoded with the task's sentencepiece model (e.g. 'Summarize the paper:')"},
    )
    spm_model: Optional[str] = field(
        default=None,
        metadata={"help": "sentencepiece model of the data; default: spm.model in the data directory"},
    )
    eval_rouge: bool = field(
        default=False, metadata={"help": "generate the validation set and log ROUGE-1/2/L F1"}
    )
    eval_rouge_args: Optional[str] = field(
        default='{"beam": 1, "max_len_b": 128}',
        metadata={"help": "generation args for validation ROUGE as a JSON string, "
                  'e.g. \'{"beam": 4, "lenpen": 2.0, "no_repeat_ngram_size": 3}\''},
    )
    eval_rouge_print_samples: bool = field(
        default=False, metadata={"help": "log one hypothesis and reference per validation batch"}
    )
    seed: int = II("common.seed")


@register_task("abstractive_summarization", dataclass=AbstractiveSummarizationConfig)
class AbstractiveSummarizationTask(BatchSeededTrainStep, TranslationTask):
    """Document -> summary with counted truncation, instruction prefixes and ROUGE."""

    cfg: AbstractiveSummarizationConfig

    def __init__(self, cfg, src_dict, tgt_dict):
        super().__init__(cfg, src_dict, tgt_dict)
        self._spm = None
        self.instruction_tokens = self.encode_text(cfg.instruction) if cfg.instruction else torch.LongTensor()

    # ------------------------------------------------------------------ text
    @property
    def spm_model_path(self):
        if self.cfg.spm_model:
            return self.cfg.spm_model
        return os.path.join(utils.split_paths(self.cfg.data)[0], "spm.model")

    @property
    def spm(self):
        """fairseq's sentencepiece BPE over the data's model, built on first use."""
        if self._spm is None:
            path = self.spm_model_path
            if not os.path.exists(path):
                raise FileNotFoundError(
                    f"sentencepiece model not found: {path} (give --spm-model, or use the data "
                    "directory that python -m preprocess.prepare wrote)"
                )
            self._spm = encoders.build_bpe(Namespace(bpe="sentencepiece", sentencepiece_model=path))
        return self._spm

    def encode_text(self, text, append_eos=False):
        """Raw text -> token ids of the joined dictionary (no ``</s>`` unless asked)."""
        pieces = self.spm.encode(text)
        return self.src_dict.encode_line(pieces, add_if_not_exist=False, append_eos=append_eos).long()

    def decode_tokens(self, tokens):
        """Token ids -> detokenized text (pad, eos and bos removed)."""
        pieces = self.tgt_dict.string(utils.strip_pad(tokens, self.tgt_dict.pad()).int().cpu())
        return self.spm.decode(pieces)

    # ------------------------------------------------------------------ data
    def _source_view(self, dataset, split):
        """Prefix and (counted) truncation of a source dataset."""
        limit = self.cfg.max_source_positions if self.cfg.truncate_source else None
        prefix = self.instruction_tokens
        n_long, longest = count_overlong(dataset.sizes + len(prefix), self.cfg.max_source_positions)
        if n_long:
            action = "truncated" if limit is not None else "left to the size filter"
            logger.info(
                f"{split}: {n_long} of {len(dataset)} sources (with instruction) are longer than "
                f"{self.cfg.max_source_positions} tokens (longest {longest}): {action}"
            )
        if limit is None and len(prefix) == 0:
            return dataset
        return PrefixTruncateDataset(dataset, prefix, limit, self.src_dict.eos())

    def _target_view(self, dataset, split):
        limit = self.cfg.max_target_positions
        n_long, longest = count_overlong(dataset.sizes, limit)
        if n_long:
            action = "truncated" if self.cfg.truncate_target else "left to the size filter"
            logger.info(
                f"{split}: {n_long} of {len(dataset)} targets are longer than {limit} tokens "
                f"(longest {longest}): {action}"
            )
        if not (n_long and self.cfg.truncate_target):
            return dataset
        return PrefixTruncateDataset(dataset, torch.LongTensor(), limit, self.tgt_dict.eos())

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        paths = utils.split_paths(self.cfg.data)
        if split != self.cfg.train_subset:
            paths = paths[:1]
        data_path = paths[(epoch - 1) % len(paths)]
        pair = load_langpair_dataset(
            data_path, split,
            self.cfg.source_lang, self.src_dict, self.cfg.target_lang, self.tgt_dict,
            combine=combine, dataset_impl=self.cfg.dataset_impl,
            upsample_primary=self.cfg.upsample_primary,
            left_pad_source=self.cfg.left_pad_source, left_pad_target=self.cfg.left_pad_target,
            max_source_positions=self.cfg.max_source_positions,
            max_target_positions=self.cfg.max_target_positions,
            truncate_source=False, shuffle=(split != "test"),
            pad_to_multiple=self.cfg.required_seq_len_multiple,
        )
        src = self._source_view(pair.src, split)
        tgt = self._target_view(pair.tgt, split) if pair.tgt is not None else None
        self.datasets[split] = LanguagePairDataset(
            src, src.sizes, self.src_dict,
            tgt, tgt.sizes if tgt is not None else None, self.tgt_dict,
            left_pad_source=self.cfg.left_pad_source, left_pad_target=self.cfg.left_pad_target,
            num_buckets=self.cfg.num_batch_buckets, shuffle=(split != "test"),
            pad_to_multiple=self.cfg.required_seq_len_multiple,
        )

    def build_dataset_for_inference(self, src_tokens, src_lengths, constraints=None):
        src = self._source_view(ListDataset(src_tokens, src_lengths), "inference")
        return LanguagePairDataset(
            src, src.sizes, self.source_dictionary,
            tgt_dict=self.target_dictionary, constraints=constraints,
            left_pad_source=self.cfg.left_pad_source,
        )

    def build_generator(self, models, args, *rest, **kwargs):
        """fairseq's generator with n-gram blocking that works on CPU (see fairseq_fixes)."""
        return fix_ngram_blocking(super().build_generator(models, args, *rest, **kwargs))

    # ------------------------------------------------------------------ ROUGE
    def build_model(self, cfg, from_checkpoint=False):
        model = super(TranslationTask, self).build_model(cfg, from_checkpoint)
        if self.cfg.eval_rouge:
            gen_args = Namespace(**json.loads(self.cfg.eval_rouge_args))
            self.sequence_generator = self.build_generator([model], gen_args)
        return model

    def valid_step(self, sample, model, criterion):
        loss, sample_size, logging_output = super(TranslationTask, self).valid_step(sample, model, criterion)
        if self.cfg.eval_rouge:
            from fairseq_ext.rouge import sentence_rouge

            hyps, refs = self._generate_for_rouge(sample, model)
            logging_output["_rouge_count"] = len(hyps)
            for key in ROUGE_KEYS:
                logging_output[f"_{key}_sum"] = 0.0
            for hyp, ref in zip(hyps, refs):
                scores = sentence_rouge(hyp, ref)
                for key in ROUGE_KEYS:
                    logging_output[f"_{key}_sum"] += float(scores[key])
        return loss, sample_size, logging_output

    def _generate_for_rouge(self, sample, model):
        gen_out = self.inference_step(self.sequence_generator, [model], sample, prefix_tokens=None)
        hyps = [self.decode_tokens(out[0]["tokens"]) for out in gen_out]
        refs = [self.decode_tokens(target) for target in sample["target"]]
        if self.cfg.eval_rouge_print_samples:
            logger.info("example hypothesis: " + hyps[0])
            logger.info("example reference: " + refs[0])
        return hyps, refs

    def reduce_metrics(self, logging_outputs, criterion):
        super(TranslationTask, self).reduce_metrics(logging_outputs, criterion)
        if not self.cfg.eval_rouge:
            return
        count = sum(log.get("_rouge_count", 0) for log in logging_outputs)
        if count == 0:
            return
        metrics.log_scalar("_rouge_count", count)
        for key in ROUGE_KEYS:
            metrics.log_scalar(f"_{key}_sum", sum(log.get(f"_{key}_sum", 0.0) for log in logging_outputs))

            def derive(meters, key=key):
                return round(100.0 * meters[f"_{key}_sum"].sum / meters["_rouge_count"].sum, 2)

            metrics.log_derived(key, derive)
