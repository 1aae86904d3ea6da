"""Files of derived data that a fresh process would otherwise recompute (sample selections): one file per key,
named by a SHA-256 of everything the content depends on, so that another input or another version of the code that
derives it gives another file.

A file holds the SHA-256 of its payload, then the payload; it is written atomically (temporary file + rename). A
file that is missing, damaged or cut short reads as absent (the caller recomputes and rewrites it); a folder that
cannot be written only costs the recomputation next time.

Folder: ``$TACTILE_SIM_DERIVED_CACHE/<kind>`` if that variable is set, else ``~/.cache/tactile_sim/<kind>``.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

ENV_VAR = "TACTILE_SIM_DERIVED_CACHE"
"""Environment variable naming the root folder of the derived-data caches."""


def cache_dir(kind: str) -> Path:
    """Folder of the ``kind`` cache files (see the module doc)."""
    root = os.environ.get(ENV_VAR)
    return (Path(root) if root else Path.home() / ".cache" / "tactile_sim") / kind


def key_name(*parts: bytes | str) -> str:
    """File name (32 hex digits) for a key made of ``parts``; parts are length-prefixed, so that no two different
    part lists give the same digest input."""
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "little") + data)
    return digest.hexdigest()[:32]


def read_payload(path: Path) -> bytes | None:
    """The payload of a cache file, or None when it is missing, unreadable or its checksum does not match."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    payload = data[32:]
    return payload if len(data) >= 32 and hashlib.sha256(payload).digest() == data[:32] else None


def write_payload(path: Path, payload: bytes) -> None:
    """Write a cache file atomically; an unwritable folder is ignored (the data is derived again next time)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=path.stem, suffix=".tmp", dir=path.parent)
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(hashlib.sha256(payload).digest() + payload)
        os.replace(tmp, path)
    except OSError:
        if os.path.exists(tmp):
            os.unlink(tmp)
