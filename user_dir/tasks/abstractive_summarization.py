"""``abstractive_summarization``: document -> summary on the binarized data of
``python -m preprocess.prepare`` (``OUT/bin``, with its text codec beside it).

fairseq's ``translation`` task plus counted truncation to the model's own length limits (the
smaller of ``--max-*-positions`` and the model's), an optional instruction prefix, word
constraints and rules for beam search, validation ROUGE and BLEU on one generation per batch
(:mod:`fairseq_ext.scoring.validation`), and checks of the binarized files before fairseq
reads them.
"""

import logging
from argparse import Namespace
from dataclasses import dataclass, field
from functools import cached_property
from typing import Optional

import numpy as np
import torch
from fairseq import utils
from fairseq.data import LanguagePairDataset, ListDataset, iterators
from fairseq.tasks import register_task
from fairseq.tasks.translation import TranslationConfig, TranslationTask, load_langpair_dataset
from omegaconf import II

from fairseq_ext.compat.flags import add_dataclass_args
from fairseq_ext.data.binarized import check_split
from fairseq_ext.data.surface import SurfaceCodec, raw_documents
from fairseq_ext.data.text_codec import codec_candidates, find_codec, load_codec
from fairseq_ext.data.wordpiece import WordPieceCodec
from fairseq_ext.decoding import DecodingConfig, plugin_generator
from fairseq_ext.decoding.document_bigrams import decode_in_turns, document_batches
from fairseq_ext.decoding.generator import decodes_documents, document_rule, words_file_lines
from fairseq_ext.scoring import bleu_metric, bleu_signature
from fairseq_ext.scoring.validation import (
    bleu_logging_output,
    log_bleu,
    log_rouge,
    rouge_logging_output,
    validation_generation_args,
)
from fairseq_ext.summarization_data import PrefixTruncateDataset, log_overlong

from ..interfaces import InitFromPretrained
from ._batch_seed import BatchSeededTrainStep

logger = logging.getLogger(__name__)


@dataclass
class AbstractiveSummarizationConfig(DecodingConfig, TranslationConfig):
    source_lang: Optional[str] = field(
        default="source", metadata={"help": "source suffix of the binarized files", "argparse_alias": "-s"}
    )
    target_lang: Optional[str] = field(
        default="target", metadata={"help": "target suffix of the binarized files", "argparse_alias": "-t"}
    )
    max_source_positions: Optional[int] = field(
        default=None,
        metadata={"help": "longest source, in tokens; default: the model's (its --arch when training, "
                  "the checkpoint's when generating); never more than the model takes"},
    )
    max_target_positions: Optional[int] = field(
        default=None,
        metadata={"help": "longest target, in tokens; default: the model's; never more than the model takes"},
    )
    truncate_source: bool = field(
        default=True,
        metadata={"help": "truncate sources to --max-source-positions (counted in the log); "
                  "with --no-truncate-source, over-long sources are left to fairseq's size filter"},
    )
    truncate_target: bool = field(
        default=True,
        metadata={"help": "truncate targets to --max-target-positions (counted in the log); "
                  "--no-truncate-target leaves them to fairseq's size filter"},
    )
    instruction: Optional[str] = field(
        default=None,
        metadata={"help": "natural-language instruction put before every source, "
                  "encoded with the task's sentencepiece model (e.g. 'Summarize the paper:')"},
    )
    spm_model: Optional[str] = field(
        default=None,
        metadata={"help": "sentencepiece model of the data; default: vocab.txt (WordPiece) or spm.model "
                  "in the data directory or its parent"},
    )
    wordpiece_vocab: Optional[str] = field(
        default=None,
        metadata={"help": "WordPiece vocab.txt of the data (BERT data); default: see --spm-model"},
    )
    restore_surface: bool = field(
        default=True,
        metadata={"help": "WordPiece data: write summaries in their source's casing and spacing "
                  "(fairseq-generate's D- lines, fairseq-interactive, the hub): a copied word as the source "
                  "writes it, English spacing and sentence capitals elsewhere (fairseq_ext.data.surface); "
                  "--no-restore-surface: the lower-cased pieces joined; no effect on sentencepiece data"},
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
        self._text_codec = None
        self._instruction_tokens = None
        self.model_max_positions = None  # (source, target) of the model(s) built by this task
        self.extra_text_codecs = []  # (kind, path) also tried for the text codec (the hub adds some)
        self.surface_codec = None  # the restoring codec handed to fairseq-generate/-interactive
        self.generated_split = None  # the last split loaded but the training one (fairseq-generate's --gen-subset)
        self._raw_documents = {}  # split -> its raw sources (or None), read once
        self._document_bigrams = {}  # --no-repeat-document-bigrams: document -> word bigrams written

    @classmethod
    def add_args(cls, parser):
        """fairseq's flags, with ``--x``/``--no-x`` for booleans that default to on."""
        add_dataclass_args(parser, getattr(cls, "__dataclass")())

    # ------------------------------------------------------------------ limits
    @property
    def source_limit(self):
        """The longest source: ``--max-source-positions`` or the model's, whichever is smaller
        (None while neither is known)."""
        return self.max_positions()[0]

    @property
    def target_limit(self):
        return self.max_positions()[1]

    def max_positions(self):
        return utils.resolve_max_positions(
            (self.cfg.max_source_positions, self.cfg.max_target_positions), self.model_max_positions
        )

    # ------------------------------------------------------------------ text
    @property
    def instruction_tokens(self):
        """The encoded ``--instruction`` (empty without one), on first use."""
        if self._instruction_tokens is None:
            text = self.cfg.instruction
            self._instruction_tokens = self.encode_text(text) if text else torch.LongTensor()
        return self._instruction_tokens

    def text_codec_candidates(self):
        """``(kind, path)`` places of the data's text codec, in the order they are tried
        (:func:`fairseq_ext.data.text_codec.codec_candidates`; the hub adds
        :attr:`extra_text_codecs`)."""
        return codec_candidates(utils.split_paths(self.cfg.data)[0], self.cfg.spm_model, self.cfg.wordpiece_vocab,
                                self.extra_text_codecs)

    @property
    def text_codec(self):
        """The data's text codec (``encode``/``decode`` like a fairseq BPE), built on first
        use: fairseq's sentencepiece BPE, or WordPiece for BERT data."""
        if self._text_codec is None:
            kind, path = find_codec(self.text_codec_candidates())
            self._text_codec = load_codec(kind, path)
            logger.info(f"text codec: {kind} {path}")
        return self._text_codec

    def build_bpe(self, args):
        """fairseq's ``--bpe`` when one is given; else the data's own codec (so that
        fairseq-interactive reads raw text and fairseq-generate's ``D-`` lines are text)."""
        if getattr(args, "_name", None) is not None:
            return super().build_bpe(args)
        try:
            return self.output_codec()
        except FileNotFoundError as err:
            logger.warning(f"no --bpe given and {err}: text is read and written as tokens")
            return None

    @property
    def restores_surface(self):
        """``--restore-surface`` applies: the data are WordPiece (sentencepiece keeps case and spacing)."""
        return bool(self.cfg.restore_surface) and isinstance(self.text_codec, WordPieceCodec)

    def output_codec(self):
        """The codec fairseq-generate and fairseq-interactive read and write text with: the
        data's, restoring WordPiece summaries to their sources' surface with ``--restore-surface``
        (:class:`fairseq_ext.data.surface.SurfaceCodec`)."""
        if not self.restores_surface:
            return self.text_codec
        self.surface_codec = SurfaceCodec(self.text_codec)
        logger.info("summaries restored to the casing and spacing of their sources (--no-restore-surface: off)")
        return self.surface_codec

    def encode_text(self, text, append_eos=False):
        """Raw text -> token ids of the joined dictionary (no ``</s>`` unless asked)."""
        pieces = self.text_codec.encode(text)
        return self.src_dict.encode_line(pieces, add_if_not_exist=False, append_eos=append_eos).long()

    def decode_tokens(self, tokens):
        """Token ids -> detokenized text (pad, eos and bos removed)."""
        pieces = self.tgt_dict.string(utils.strip_pad(tokens, self.tgt_dict.pad()).int().cpu())
        return self.text_codec.decode(pieces)

    # ------------------------------------------------------------------ data
    def _source_view(self, dataset, split):
        """Prefix and (counted) truncation of a source dataset."""
        limit = self.source_limit if self.cfg.truncate_source else None
        prefix = self.instruction_tokens
        # sizes may be a list: fairseq-interactive (0.12.3) builds its dataset from a list of lengths
        sizes = np.asarray(dataset.sizes) + len(prefix)
        log_overlong(split, sizes, self.source_limit, "sources (with instruction)", limit is not None)
        if limit is None and len(prefix) == 0:
            return dataset
        return PrefixTruncateDataset(dataset, prefix, limit, self.src_dict.eos())

    def _target_view(self, dataset, split):
        limit = self.target_limit
        n_long = log_overlong(split, dataset.sizes, limit, "targets", self.cfg.truncate_target)
        if not (n_long and self.cfg.truncate_target):
            return dataset
        return PrefixTruncateDataset(dataset, torch.LongTensor(), limit, self.tgt_dict.eos())

    def check_split(self, data_path, split):
        """The binarized ``split`` in ``data_path`` checked before fairseq reads it
        (:func:`fairseq_ext.data.binarized.check_split`)."""
        if self.cfg.dataset_impl != "raw":
            check_split(data_path, split, self.cfg.source_lang, self.cfg.target_lang)

    def load_dataset(self, split, epoch=1, combine=False, **kwargs):
        paths = utils.split_paths(self.cfg.data)
        if split != self.cfg.train_subset:
            paths = paths[:1]
            self.generated_split = split
        data_path = paths[(epoch - 1) % len(paths)]
        self.check_split(data_path, split)
        pair = load_langpair_dataset(
            data_path, split,
            self.cfg.source_lang, self.src_dict, self.cfg.target_lang, self.tgt_dict,
            combine=combine, dataset_impl=self.cfg.dataset_impl,
            upsample_primary=self.cfg.upsample_primary,
            left_pad_source=self.cfg.left_pad_source, left_pad_target=self.cfg.left_pad_target,
            max_source_positions=self.source_limit, max_target_positions=self.target_limit,
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

    def inference_step(self, generator, models, sample, prefix_tokens=None, constraints=None):
        """fairseq's; with a restoring codec, the batch's raw documents are handed to it first."""
        if self.surface_codec is not None and "id" in sample:
            documents = self.raw_documents(self.generated_split)
            if documents is not None:
                self.surface_codec.expect(self._batch_documents(sample, documents))
        rule = document_rule(generator) if "id" in sample else None
        if rule is None:
            return super().inference_step(
                generator, models, sample, prefix_tokens=prefix_tokens, constraints=constraints)
        if constraints is not None:
            raise ValueError("--no-repeat-document-bigrams does not combine with --constraints")

        def generate(rows_sample, rows):
            prefix = prefix_tokens.index_select(0, rows.to(prefix_tokens.device)) if prefix_tokens is not None else None
            return super(AbstractiveSummarizationTask, self).inference_step(
                generator, models, rows_sample, prefix_tokens=prefix)

        return decode_in_turns(generate, sample, rule, self.cfg.lines_per_document, self._document_bigrams)

    def get_batch_iterator(self, dataset, max_tokens=None, max_sentences=None, max_positions=None,
                           ignore_invalid_inputs=False, required_batch_size_multiple=1, seed=1, num_shards=1,
                           shard_id=0, num_workers=0, epoch=1, data_buffer_size=0, **kwargs):
        """fairseq's; with ``--no-repeat-document-bigrams``, outside training, batches of whole
        documents in id order (:func:`fairseq_ext.decoding.document_bigrams.document_batches`)."""
        if not decodes_documents(self.cfg) or dataset is self.datasets.get(self.cfg.train_subset):
            return super().get_batch_iterator(
                dataset, max_tokens=max_tokens, max_sentences=max_sentences, max_positions=max_positions,
                ignore_invalid_inputs=ignore_invalid_inputs, required_batch_size_multiple=required_batch_size_multiple,
                seed=seed, num_shards=num_shards, shard_id=shard_id, num_workers=num_workers, epoch=epoch,
                data_buffer_size=data_buffer_size, **kwargs)
        indices = dataset.ordered_indices()
        if max_positions is not None:
            indices = self.filter_indices_by_size(indices, dataset, max_positions, ignore_invalid_inputs)
        batches = document_batches(indices, self.cfg.lines_per_document, max_sentences)
        return iterators.EpochBatchIterator(
            dataset=dataset, collate_fn=dataset.collater, batch_sampler=batches, seed=seed,
            num_shards=num_shards, shard_id=shard_id, num_workers=num_workers, epoch=epoch,
            buffer_size=data_buffer_size)

    def _batch_documents(self, sample, documents):
        """``{source pieces as fairseq-generate prints them: raw document}`` of a batch."""
        sources = sample["net_input"]["src_tokens"]  # (B, S)
        return {self.src_dict.string(utils.strip_pad(sources[i], self.tgt_dict.pad())): documents[index]
                for i, index in enumerate(sample["id"].tolist())}

    def raw_documents(self, split):
        """The raw sources of a loaded ``split`` (:func:`fairseq_ext.data.surface.raw_documents`), read once."""
        if split is None or split not in self.datasets:
            return None
        if split not in self._raw_documents:
            data = utils.split_paths(self.cfg.data)[0]
            self._raw_documents[split] = raw_documents(data, split, self.cfg.source_lang, len(self.datasets[split]))
        return self._raw_documents[split]

    def build_generator(self, models, args, *rest, **kwargs):
        """fairseq's generator made the plugin's: fixes, word constraint and rules
        (:func:`fairseq_ext.decoding.plugin_generator`)."""
        generator = super().build_generator(models, args, *rest, **kwargs)
        self._document_bigrams = {}
        return plugin_generator(generator, self.cfg, self.tgt_dict, args, lambda: self.decode_words_extra)

    @cached_property
    def decode_words_extra(self):
        """The lines of ``--decode-words-file`` as lists of words, read once."""
        return words_file_lines(self.cfg.decode_words_file, lambda text: self.encode_text(text).tolist(), self.tgt_dict)

    # ------------------------------------------------------------------ model
    def build_model(self, cfg, from_checkpoint=False):
        """fairseq's model, whose length limits this task then keeps to (an ensemble: the
        smallest); sets up the validation generator for ``--eval-rouge``. A model built to be
        trained (not ``from_checkpoint``) that starts from released weights loads them here
        (:class:`~user_dir.interfaces.InitFromPretrained`)."""
        # FairseqTask's, not TranslationTask's: that one builds a generator of its own for
        # --eval-bleu, with fairseq's detokenizer instead of the data's codec
        model = super(TranslationTask, self).build_model(cfg, from_checkpoint)
        if isinstance(model, InitFromPretrained) and not from_checkpoint:
            model.init_from_pretrained()
        self.model_max_positions = utils.resolve_max_positions(self.model_max_positions, model.max_positions())
        asked = (self.cfg.max_source_positions, self.cfg.max_target_positions)
        for side, wanted, allowed in zip(("source", "target"), asked, self.max_positions()):
            if wanted is not None and allowed is not None and wanted > allowed:
                logger.warning(f"--max-{side}-positions {wanted} is more than the model takes: "
                               f"{side}s are limited to {allowed} tokens")
        if self.cfg.eval_rouge or self.cfg.eval_bleu:
            gen_args = validation_generation_args(
                self.cfg.eval_rouge, self.cfg.eval_rouge_args, self.cfg.eval_bleu, self.cfg.eval_bleu_args
            )
            self.sequence_generator = self.build_generator([model], Namespace(**gen_args))
        if self.cfg.eval_bleu:
            if self.cfg.eval_bleu_detok != "space" or self.cfg.eval_bleu_remove_bpe:
                logger.warning("--eval-bleu-detok/--eval-bleu-remove-bpe are ignored: validation text "
                               "is decoded with the data's sentencepiece or WordPiece model")
            logger.info(f"validation BLEU: sacrebleu {bleu_signature(self.bleu_metric)}")
        return model

    @cached_property
    def bleu_metric(self):
        """sacrebleu's BLEU as the command line computes it (``--eval-tokenized-bleu``: no
        tokenization of the decoded text)."""
        return bleu_metric("none" if self.cfg.eval_tokenized_bleu else None)

    def valid_step(self, sample, model, criterion):
        # FairseqTask's, not TranslationTask's: that one would generate the batch again and score
        # it with fairseq's detokenizer for --eval-bleu
        loss, sample_size, logging_output = super(TranslationTask, self).valid_step(sample, model, criterion)
        if self.cfg.eval_rouge or self.cfg.eval_bleu:
            hyps, refs = self._generate_for_validation(sample, model)
        if self.cfg.eval_bleu:
            logging_output.update(bleu_logging_output(self.bleu_metric, hyps, refs))
        if self.cfg.eval_rouge:
            logging_output.update(rouge_logging_output(hyps, refs))
        return loss, sample_size, logging_output

    def _generate_for_validation(self, sample, model):
        """Detokenized hypotheses and references of a validation batch (ROUGE and BLEU)."""
        gen_out = self.inference_step(self.sequence_generator, [model], sample, prefix_tokens=None)
        hyps = [self.decode_tokens(out[0]["tokens"]) for out in gen_out]
        refs = [self.decode_tokens(target) for target in sample["target"]]
        if self.cfg.eval_rouge_print_samples or self.cfg.eval_bleu_print_samples:
            logger.info("example hypothesis: " + hyps[0])
            logger.info("example reference: " + refs[0])
        return hyps, refs

    def reduce_metrics(self, logging_outputs, criterion):
        # FairseqTask's, not TranslationTask's: that one would derive a second ``bleu`` from the
        # same keys with its own sacrebleu call (log_bleu derives it with the task's metric)
        super(TranslationTask, self).reduce_metrics(logging_outputs, criterion)
        if self.cfg.eval_bleu:
            log_bleu(logging_outputs, self.bleu_metric)
        if self.cfg.eval_rouge:
            log_rouge(logging_outputs)
