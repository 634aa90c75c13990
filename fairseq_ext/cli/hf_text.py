"""``python -m fairseq_ext.cli.hf_text``: the command of :mod:`fairseq_ext.transformer_sm.hf_text`."""

import argparse
import sys

from ..transformer_sm.hf_text import decode_line, encode_file, load_tokenizer

DESCRIPTION = "Text <-> token-id lines with a local Hugging Face tokenizer (converted GPT / GPT-2 data)."


def main(argv=None):
    parser = argparse.ArgumentParser(description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True)
    enc = sub.add_parser("encode", help="text files -> id files")
    enc.add_argument("--tokenizer", required=True, help="local Hugging Face tokenizer folder")
    enc.add_argument("--inputs", nargs="+", required=True)
    enc.add_argument("--outputs", nargs="+", required=True)
    dec = sub.add_parser("decode", help="lines of ids on stdin -> text on stdout")
    dec.add_argument("--tokenizer", required=True, help="local Hugging Face tokenizer folder")
    args = parser.parse_args(argv)

    tokenizer = load_tokenizer(args.tokenizer)
    if args.command == "encode":
        if len(args.inputs) != len(args.outputs):
            parser.error(f"{len(args.inputs)} inputs but {len(args.outputs)} outputs")
        for in_path, out_path in zip(args.inputs, args.outputs):
            encode_file(tokenizer, in_path, out_path)
    else:
        for number, line in enumerate(sys.stdin, start=1):
            sys.stdout.write(decode_line(tokenizer, line, number) + "\n")


if __name__ == "__main__":
    main()
