"""``s2s_ft``: one shared bidirectional Transformer fine-tuned for seq2seq (Bao et al.;
:mod:`fairseq_ext.s2s_ft`). ``--s2s-method`` picks causal, masked or pseudo-masked
fine-tuning; ``--init-from-hf DIR`` starts from a HF BERT/RoBERTa checkpoint when a model is
built to train (:class:`~user_dir.interfaces.InitFromPretrained`).
"""

from dataclasses import dataclass, field
from typing import Optional

from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from fairseq.models import register_model, register_model_architecture
from omegaconf import II

from fairseq_ext.compat.flags import add_dataclass_args
from fairseq_ext.convert.s2s_ft import load_pretrained
from fairseq_ext.s2s_ft.model import METHODS, S2SFTDecoder, S2SFTEncoder, S2SFTEncoderDecoder, mask_index
from fairseq_ext.s2s_ft.transformer import S2SFTTransformer, S2SFTTransformerConfig

from ..interfaces import InitFromPretrained
from ..tasks.abstractive_summarization import AbstractiveSummarizationTask
from ._positions import fill_positions
from ._sizes import set_defaults

DEFAULT_TARGET_POSITIONS = 128
"""Summary length when neither the task nor the flags give one; the source gets the rest of
``--max-positions``."""


@dataclass
class S2SFTConfig(FairseqDataclass):
    s2s_method: ChoiceEnum(METHODS) = field(
        default="pseudo",
        metadata={"help": "fine-tuning method: causal (position shift), masked (predict noised "
                  "target tokens) or pseudo (a [P] per target token; the paper's default)"},
    )
    target_mask_prob: float = field(
        default=0.5,
        metadata={"help": "share of target tokens noised: masked = the tokens masked and predicted; "
                  "pseudo/causal = teacher-forced context tokens noised during training"},
    )
    source_mask_prob: float = field(
        default=0.0, metadata={"help": "share of source tokens noised during training (never predicted)"}
    )
    random_token_prob: float = field(
        default=0.1, metadata={"help": "share of noised tokens replaced by a random token"}
    )
    leave_unmasked_prob: float = field(
        default=0.1, metadata={"help": "share of noised tokens left unchanged (the rest become the mask token)"}
    )
    embed_dim: int = field(default=768, metadata={"help": "hidden size"})
    layers: int = field(default=12, metadata={"help": "number of Transformer layers"})
    attention_heads: int = field(default=12, metadata={"help": "attention heads per layer"})
    ffn_embed_dim: int = field(default=3072, metadata={"help": "feed-forward inner size"})
    max_positions: int = field(
        default=512, metadata={"help": "learned positions, shared by source + target (BERT: 512)"}
    )
    type_vocab_size: int = field(default=2, metadata={"help": "token types (source 0, target 1)"})
    dropout: float = field(default=0.1, metadata={"help": "dropout on embeddings and sublayer outputs"})
    attention_dropout: float = field(default=0.1, metadata={"help": "dropout on attention weights"})
    layer_norm_eps: float = field(default=1e-12, metadata={"help": "LayerNorm epsilon (BERT: 1e-12)"})
    init_std: float = field(default=0.02, metadata={"help": "std of the normal initialization"})
    prepend_bos: bool = field(
        default=True, metadata={"help": "put <s> ([CLS] for BERT data) before every source, as BERT reads"}
    )
    copy_heads: int = field(
        default=0,
        metadata={"help": "copy mechanism (pointer-generator, See et al. 2017): copy source tokens through "
                  "the average of the last layer's first N attention heads over the source; 0 = off"},
    )
    copy_attention_dim: int = field(
        default=0,
        metadata={"help": "copy mechanism through an attention of its own (one head of this width, from the "
                  "output states over the source's) instead of the last layer's heads; 0 = off"},
    )
    coverage: bool = field(
        default=False,
        metadata={"help": "coverage mechanism of the copy attention (See et al. 2017, Section 2.3): the sum of "
                  "earlier steps' copy attention enters its scores through a learned weight per head, "
                  "initialised at 0 so that a checkpoint trained without it loads and decodes unchanged; train "
                  "with --coverage-loss-weight (criterion s2s_ft); needs --copy-heads or --copy-attention-dim"},
    )
    init_from_hf: Optional[str] = field(
        default=None,
        metadata={"help": "HF BERT/RoBERTa directory (config.json, model.safetensors, vocab.txt) to start "
                  "training from; its vocabulary must be the data's (never read when a checkpoint is "
                  "loaded for generation or the hub)"},
    )
    max_source_positions: Optional[int] = II("task.max_source_positions")
    max_target_positions: Optional[int] = II("task.max_target_positions")


@register_model("s2s_ft", dataclass=S2SFTConfig)
class S2SFTModel(S2SFTEncoderDecoder, InitFromPretrained):
    """s2s-ft: the encoder and the decoder are one Transformer under seq2seq masks
    (``encoder.body is decoder.body``); the fine-tuning forward pass is
    :class:`~fairseq_ext.s2s_ft.model.S2SFTEncoderDecoder`'s."""

    @classmethod
    def add_args(cls, parser):
        """fairseq's flags, with ``--x``/``--no-x`` for booleans that default to on."""
        add_dataclass_args(parser, getattr(cls, "__dataclass")(), delete_default=True)

    @classmethod
    def build_model(cls, cfg: S2SFTConfig, task):
        src_dict, tgt_dict = task.source_dictionary, task.target_dictionary
        if src_dict.symbols != tgt_dict.symbols:
            raise ValueError("s2s-ft reads source and target with one embedding: use a joined dictionary")
        if cfg.init_from_hf and not isinstance(task, AbstractiveSummarizationTask):
            raise ValueError(f"--init-from-hf is applied by the summarization tasks (--task s2s_ft_summarization), "
                             f"not by {type(task).__name__}")
        if task.cfg.left_pad_target:
            raise ValueError("s2s-ft needs right-padded targets (--left-pad-target False)")
        # limits not given: a summary of DEFAULT_TARGET_POSITIONS, the rest for the source
        fill_positions(cfg, lambda target: cfg.max_positions - int(cfg.prepend_bos) - target,
                       DEFAULT_TARGET_POSITIONS)
        needed = cfg.max_source_positions + int(cfg.prepend_bos) + cfg.max_target_positions
        if needed > cfg.max_positions:
            raise ValueError(
                f"--max-source-positions {cfg.max_source_positions} (+{int(cfg.prepend_bos)} for <s>) + "
                f"--max-target-positions {cfg.max_target_positions} = {needed} exceeds the model's "
                f"{cfg.max_positions} positions"
            )
        body = S2SFTTransformer(
            S2SFTTransformerConfig(
                vocab_size=len(src_dict),
                padding_idx=src_dict.pad(),
                embed_dim=cfg.embed_dim,
                layers=cfg.layers,
                attention_heads=cfg.attention_heads,
                ffn_embed_dim=cfg.ffn_embed_dim,
                max_positions=cfg.max_positions,
                type_vocab_size=cfg.type_vocab_size,
                dropout=cfg.dropout,
                attention_dropout=cfg.attention_dropout,
                layer_norm_eps=cfg.layer_norm_eps,
                init_std=cfg.init_std,
            )
        )
        encoder = S2SFTEncoder(src_dict, body, prepend_bos=cfg.prepend_bos)
        decoder = S2SFTDecoder(
            tgt_dict, body, cfg.s2s_method, mask_index(tgt_dict), cfg.max_target_positions, cfg.copy_heads,
            cfg.copy_attention_dim, coverage=cfg.coverage,
        )
        return cls(cfg, encoder, decoder, tgt_dict)

    def init_from_pretrained(self):
        if self.cfg.init_from_hf:
            load_pretrained(self.encoder.body, self.cfg.init_from_hf, self.dictionary.symbols)


@register_model_architecture("s2s_ft", "s2s_ft_base")
def s2s_ft_base(args):
    """BERT-base / RoBERTa-base: 12 layers, 768 wide, 12 heads, 3072 FFN, 512 positions."""
    set_defaults(args, embed_dim=768, layers=12, attention_heads=12, ffn_embed_dim=3072, max_positions=512)


@register_model_architecture("s2s_ft", "s2s_ft_large")
def s2s_ft_large(args):
    """BERT-large / RoBERTa-large: 24 layers, 1024 wide, 16 heads, 4096 FFN."""
    set_defaults(args, embed_dim=1024, layers=24, attention_heads=16, ffn_embed_dim=4096)
    s2s_ft_base(args)


@register_model_architecture("s2s_ft", "s2s_ft_minilm_l6_h384")
def s2s_ft_minilm_l6_h384(args):
    """MiniLM-L6-H384 (all-MiniLM-L6-v2's shape): 6 layers, 384 wide, 12 heads, 1536 FFN."""
    set_defaults(args, embed_dim=384, layers=6, attention_heads=12, ffn_embed_dim=1536)
    s2s_ft_base(args)


@register_model_architecture("s2s_ft", "s2s_ft_tiny")
def s2s_ft_tiny(args):
    """For tests: 2 layers, 64 wide, 4 heads, 128 FFN."""
    set_defaults(args, embed_dim=64, layers=2, attention_heads=4, ffn_embed_dim=128)
    s2s_ft_base(args)
