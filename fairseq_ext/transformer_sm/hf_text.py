"""Text <-> token-id lines with a local Hugging Face tokenizer (``python -m
fairseq_ext.cli.hf_text``), for the data of converted GPT / GPT-2 weights, whose dictionary
symbols are token ids. Empty lines stay empty; in decoding fairseq's special symbols are
dropped and any other non-id is an error naming the line.
"""



def load_tokenizer(path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path, local_files_only=True)


def encode_line(tokenizer, text):
    """``"a text"`` -> ``"464 2420"`` (no special tokens added)."""
    return " ".join(str(i) for i in tokenizer.encode(text.rstrip("\n"), add_special_tokens=False))


def decode_line(tokenizer, ids_line, line_number=None):
    """``"464 2420"`` -> ``"a text"``."""
    symbols = [s for s in ids_line.split() if not (s.startswith("<") and s.endswith(">"))]
    bad = [s for s in symbols if not s.isdigit()]
    if bad:
        where = f" on line {line_number}" if line_number is not None else ""
        raise ValueError(f"not token ids{where}: {bad[:5]}")
    return tokenizer.decode([int(s) for s in symbols]).strip()


def encode_file(tokenizer, in_path, out_path):
    with open(in_path, encoding="utf-8") as src, open(out_path, "w", encoding="utf-8") as out:
        for line in src:
            out.write(encode_line(tokenizer, line) + "\n")
