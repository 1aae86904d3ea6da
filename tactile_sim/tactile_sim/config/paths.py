"""Path resolution for configuration files: relative paths, ``file://`` and ``package://pkg/rel``.

``package://pkg/rel`` is looked up through, in this order: the ROS 2 ament index (``ament_index_python``, when
importable and it knows the package), the roots listed in the environment variable ``TACTILE_SIM_PACKAGE_PATH``
(``os.pathsep``-separated; a root holds package folders, ``<root>/<pkg>/rel``), and, for ``package://tactile_sim/…``
only, the installed tactile_sim package itself (source/editable checkout with ``package.xml``, the pip-installed
``<prefix>/share/tactile_sim`` data files, then the Python package folder). The first location where ``rel`` exists
wins; when it exists nowhere the first candidate is returned so that the caller's existence check names it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote

from ..world.resources import _ament_share
from .errors import OptionProblem

PACKAGE_PATH_ENV = "TACTILE_SIM_PACKAGE_PATH"
"""Environment variable: os.pathsep-separated roots holding ROS package folders (used without ROS)."""

PathKind = Literal["file", "dir", "any"]
"""What a resolved path must be: an existing file, an existing folder, or a folder that may not exist yet (caches;
refused where a file is in the way)."""


def _bundled_roots() -> list[Path]:
    """Where the installed tactile_sim keeps its package files (see the module docstring)."""
    python_pkg = Path(__file__).resolve().parents[1]
    roots = []
    if (python_pkg.parent / "package.xml").is_file():
        roots.append(python_pkg.parent)
    roots += [Path(sys.prefix) / "share" / "tactile_sim", python_pkg]
    return roots


def package_roots(package: str) -> list[Path]:
    """Every folder that may hold ``package``'s files, in lookup order (ament share, env roots, bundled data)."""
    roots = []
    share = _ament_share(package)
    if share is not None:
        roots.append(share)
    for root in os.environ.get(PACKAGE_PATH_ENV, "").split(os.pathsep):
        if root and (Path(root).expanduser() / package).is_dir():
            roots.append(Path(root).expanduser() / package)
    if package == "tactile_sim":
        roots += [r for r in _bundled_roots() if r.is_dir()]
    return roots


def package_share(package: str) -> Path | None:
    """The first folder of :func:`package_roots` (a ``package_resolver`` for URDF mesh lookup), or None."""
    roots = package_roots(package)
    return roots[0] if roots else None


def resolve_package_uri(uri: str) -> Path:
    """``package://pkg/rel`` → a path (the first root where ``rel`` exists, else under the first root).

    Raises OptionProblem when the URI is malformed or no root knows the package.
    """
    package, _, rel = uri[len("package://"):].partition("/")
    if not package or not rel:
        raise OptionProblem("malformed package URI", uri, "package://<package>/<relative path>")
    roots = package_roots(package)
    if not roots:
        raise OptionProblem(
            f"ROS package {package!r} not found (ament index, {PACKAGE_PATH_ENV}"
            + (", the installed tactile_sim" if package == "tactile_sim" else "") + ")",
            uri, f"a package known to ament, or a root holding '{package}/' listed in {PACKAGE_PATH_ENV}")
    for root in roots:
        if (root / rel).exists():
            return root / rel
    return roots[0] / rel


def resolve_path(value: Any, base_dir: str | os.PathLike | None, kind: PathKind = "file") -> Path:
    """Resolve a configured path: ``package://``, ``file://``, ``~``, absolute, or relative to ``base_dir``
    (the YAML file's folder; the working directory when None). ``kind`` "file"/"dir" require an existing
    file/folder; "any" accepts a folder that does not exist yet (caches) unless a file is in its place or in its
    parents' places. Raises OptionProblem."""
    if not isinstance(value, (str, os.PathLike)) or not str(value):
        raise OptionProblem("not a path", value, "a non-empty path string, file:// or package://<pkg>/<path>")
    text = str(value)
    if text.startswith("package://"):
        path = resolve_package_uri(text)
    elif text.startswith("file://"):
        path = Path(unquote(text[len("file://"):]))
    elif "://" in text:
        raise OptionProblem("unsupported URI scheme", text, "a file path, file://<path> or package://<pkg>/<path>")
    else:
        try:
            path = Path(text).expanduser()
        except RuntimeError:  # ~user of an unknown user, or no home folder
            raise OptionProblem("unknown home folder in '~'", text, "a path whose ~ or ~user names a known home folder") \
                from None
        if not path.is_absolute():
            path = Path(base_dir if base_dir is not None else Path.cwd()) / path
    path = Path(os.path.normpath(path.absolute()))
    try:
        return _checked_place(path, text, kind)
    except OSError as exc:  # a name too long for the file system, a folder that cannot be read, ...
        raise OptionProblem(f"unusable path ({exc.strerror or exc})", text,
                            "a path the file system accepts (each name at most 255 bytes)") from None


def _checked_place(path: Path, text: str, kind: PathKind) -> Path:
    """``path`` (resolved from the configured ``text``) when it is what ``kind`` asks for (:func:`resolve_path`), else
    OptionProblem; OSError where the file system refuses to look."""
    if kind == "file" and not path.is_file():
        found = "not a regular file (a folder, a device or a pipe)" if path.exists() else "file not found"
        raise OptionProblem(f"{found} (resolved to {path})", text,
                            "an existing file; relative paths resolve against the YAML file's folder")
    if kind == "dir" and not path.is_dir():
        raise OptionProblem(f"folder not found (resolved to {path})", text,
                            "an existing folder; relative paths resolve against the YAML file's folder")
    if kind == "any":
        blocking = file_in_the_way(path)
        if blocking is not None:
            raise OptionProblem(f"not a folder: {blocking} {in_the_way(blocking)}", text,
                                "a folder, existing or to be created (not a regular file)")
    return path


def file_in_the_way(path: Path, *, itself: bool = True) -> Path | None:
    """The first of ``path`` (unless not ``itself``) and its parents that exists and is not a folder, or is a
    symbolic link that leads nowhere: what stops ``path`` from being made a folder (or made inside one); None when
    nothing does (:func:`in_the_way` says what it is)."""
    return next((p for p in ((path,) if itself else ()) + tuple(path.parents)
                 if (p.exists() and not p.is_dir()) or (p.is_symlink() and not p.exists())), None)


def in_the_way(blocking: Path) -> str:
    """What the :func:`file_in_the_way` ``blocking`` is, for an error: "is a file" or a link that leads nowhere."""
    if blocking.is_symlink() and not blocking.exists():
        return "is a symbolic link that leads nowhere (dangling, or a loop)"
    return "is a file"
