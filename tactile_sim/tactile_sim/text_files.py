"""Reading the files a user names (a robot description, a layout, a list of recordings): regular files only (a
device such as /dev/zero would be read without end) of at most :data:`~.constants.MAX_TEXT_FILE_BYTES`."""

from __future__ import annotations

import os
from pathlib import Path

from .constants import MAX_TEXT_FILE_BYTES


def read_file_bytes(path: str | os.PathLike, what: str) -> bytes:
    """The bytes of the regular file ``path`` (``what`` names it in errors: an option, an argument or a kind of
    file): ValueError for another kind of file or one over :data:`~.constants.MAX_TEXT_FILE_BYTES`; OSError as the
    file system raises it."""
    path = Path(path)
    if not path.is_file():
        kind = "not a regular file (a folder, a device or a pipe)" if path.exists() else "not found"
        raise ValueError(f"{what} {str(path)!r}: {kind}; allowed: an existing text file")
    size = path.stat().st_size
    if size > MAX_TEXT_FILE_BYTES:
        raise ValueError(f"{what} {str(path)!r}: {size} bytes; allowed: a text file of at most {MAX_TEXT_FILE_BYTES} "
                         "bytes")
    return path.read_bytes()


def read_text_file(path: str | os.PathLike, what: str) -> str:
    """The UTF-8 text of the regular file ``path``: :func:`read_file_bytes`, and ValueError for bytes that are not
    UTF-8."""
    data = read_file_bytes(path, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{what} {str(path)!r}: not UTF-8 text ({exc.reason} at byte {exc.start}); allowed: a "
                         "UTF-8 text file") from None
