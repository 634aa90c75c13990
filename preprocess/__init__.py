"""Command-line tools that turn raw corpora into fairseq binarized data."""
