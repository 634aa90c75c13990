"""Reading one-item-per-line text files strictly: UTF-8 errors name the line."""

from pathlib import Path


def read_lines(path: str | Path) -> list[str]:
    """The lines of a UTF-8 file, without their ``\\n`` (or ``\\r\\n``).

    Only ``\\n`` ends a line, so the count is ``wc -l`` plus a last line without a newline.
    Raises ``ValueError`` naming the file, line and byte column of the first invalid UTF-8.
    """
    data = Path(path).read_bytes()
    raw_lines = data.split(b"\n")
    if raw_lines[-1] == b"":  # the newline that ends the last line
        raw_lines.pop()
    lines = []
    for number, raw in enumerate(raw_lines, start=1):
        try:
            lines.append(raw.removesuffix(b"\r").decode("utf-8"))
        except UnicodeDecodeError as error:
            raise ValueError(f"{path}: line {number} is not valid UTF-8 ({error.reason} at byte "
                             f"{error.start + 1}: {raw[error.start:error.start + 1]!r})") from None
    return lines
