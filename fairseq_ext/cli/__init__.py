"""The command-line programs of the library, one module each: ``python -m fairseq_ext.cli.NAME``.

==================  ===================================================================
``convert``          released weights -> a checkpoint of the plugin
``files2rouge``      ROUGE of two files (the ``files2rouge`` command)
``rouge_paired``     two systems on the same documents: paired bootstrap interval and p-value
``lead``             the LEAD-n baseline
``fluency``          back-to-back repeats and repeated bigrams of summary files
``qg``               question-generation BLEU-4, ROUGE-L, METEOR
``join_lines``       every N lines joined into one (aspect summaries -> a document's)
``restore_surface``  WordPiece summaries in their sources' casing and spacing
``gap_sentences``    PEGASUS gap-sentence pairs from the shipped Wikipedia text
``squad_sample``     the small SQuAD-format sample of the question-generation recipes
``hf_text``          text <-> token-id lines with a local Hugging Face tokenizer
``zcodepp_export``   a phase-one Z-Code++ checkpoint with the GDES delta folded in
``checkpoint_args``  the model flags a recipe takes from ``args.txt`` (``scripts/lib.sh``)
``average_checkpoints``  the mean of a run's last checkpoints (read safely), one checkpoint
``mbr``              one summary per source from fairseq-generate's n best (minimum Bayes risk)
==================  ===================================================================

Each parses its arguments and calls the library; the data preparation commands are
``python -m preprocess.prepare`` and ``python -m preprocess.prepare_wordpiece``.
"""


def register_plugin():
    """Register the plugin's names (the tasks and models its checkpoints select) without its
    fixes: the converter and export programs read the plugin's checkpoints."""
    from ..compat import fixes

    with fixes.unchanged():
        import user_dir  # noqa: F401
