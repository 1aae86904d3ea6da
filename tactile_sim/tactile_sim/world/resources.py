"""Resolution of resource URIs (``package://``, ``file://``, absolute and relative paths) to files on disk.

Used for URDF mesh filenames and for any other file a scene description names. ``package://pkg/rest`` is looked up,
in this order, through a caller-supplied ``package_resolver(pkg) -> share folder``, ROS 2's ament index
(``ament_index_python``, when importable), and each configured search path (``<sp>/pkg/rest``, then ``<sp>/rest``).
Relative paths are taken relative to ``base_dir`` (the folder of the file that names them), then each search path.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from urllib.parse import unquote

from ..errors import SceneError

PackageResolver = Callable[[str], "str | os.PathLike | None"]
"""Maps a ROS package name to its share folder, or None when it does not know the package."""


def _ament_share(package: str) -> Path | None:
    """The package's share folder from the ament index, or None when ament is absent or lacks the package."""
    try:
        from ament_index_python.packages import PackageNotFoundError, get_package_share_directory
    except ImportError:
        return None
    try:
        return Path(get_package_share_directory(package))
    except (PackageNotFoundError, ValueError, LookupError):
        return None


def candidate_paths(uri: str, *, base_dir: str | os.PathLike | None = None, search_paths: Iterable = (),
                    package_resolver: PackageResolver | None = None) -> list[Path]:
    """Every path tried for ``uri``, in the order they are tried (see the module docstring)."""
    search = [Path(p) for p in search_paths]
    if uri.startswith("package://"):
        rest = uri[len("package://"):]
        package, _, rel = rest.partition("/")
        if not package or not rel:
            raise SceneError(f"resource {uri!r}: a package URI needs the form package://<package>/<path>")
        tried = []
        if package_resolver is not None:
            share = package_resolver(package)
            if share is not None:
                tried.append(Path(share) / rel)
        share = _ament_share(package)
        if share is not None:
            tried.append(share / rel)
        for sp in search:
            tried += [sp / package / rel, sp / rel]
        return tried
    if uri.startswith("file://"):
        return [Path(unquote(uri[len("file://"):]))]
    if "://" in uri:
        raise SceneError(f"resource {uri!r}: unsupported URI scheme; allowed: package://, file://, or a file path")
    path = Path(uri).expanduser()
    if path.is_absolute():
        return [path]
    bases = ([Path(base_dir)] if base_dir is not None else []) + search
    return [b / path for b in bases] if bases else [Path.cwd() / path]


def resolve_resource(uri: str, *, base_dir: str | os.PathLike | None = None, search_paths: Iterable = (),
                     package_resolver: PackageResolver | None = None, where: str = "") -> Path:
    """The first existing file for ``uri``; SceneError naming ``where``, the URI and every path tried otherwise (or the
    first that exists but is not a regular file)."""
    tried = candidate_paths(uri, base_dir=base_dir, search_paths=search_paths, package_resolver=package_resolver)
    for path in tried:
        if path.is_file():
            return path
    prefix = f"{where}: " if where else ""
    special = [p for p in tried if p.exists()]  # each a folder, a device or a pipe (not a regular file)
    if special:
        raise SceneError(f"{prefix}{uri!r} is not a regular file (a folder, a device or a pipe): {special[0]}; "
                         "allowed: a mesh file")
    listing = ", ".join(str(p) for p in tried) if tried else "none (no package resolver, ament index or search path)"
    raise SceneError(f"{prefix}file not found for {uri!r}; tried: {listing}; "
                     "fix the path or add the folder that holds it to search_paths")
