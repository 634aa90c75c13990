"""Model archives extracted as data: each member a regular file or a directory with a relative
name that stays inside the destination, or the archive is refused (symlinks, hard links,
devices, FIFOs, absolute names, ``..``, a URL) before anything is written; then Python's
``filter="data"`` extracts, and the archive is kept. :func:`safe_archive_loading` and
:func:`local_files_only` replace fairseq's ``load_archive_file`` and ``cached_path``: nothing
is fetched while loading.
"""

import functools
import os
import tarfile
import tempfile
from pathlib import PurePosixPath

from .config_schema import is_remote


class UnsafeArchiveError(ValueError):
    """An archive holding a member that could land outside its folder (message: file, member)."""


def member_problem(member):
    """Why ``member`` (a ``tarfile.TarInfo``) may not be extracted, or ``None``."""
    name = member.name
    if not (member.isfile() or member.isdir()):
        kind = "symlink" if member.issym() else "hard link" if member.islnk() else "device or special file"
        target = f" -> {member.linkname}" if member.issym() or member.islnk() else ""
        return f"a {kind}{target}; an archive holds regular files and folders only"
    if "\x00" in name or "\\" in name:
        return "a name with a NUL or a backslash"
    path = PurePosixPath(name)
    if path.is_absolute() or (path.parts and ":" in path.parts[0]):
        return "an absolute name"
    if ".." in path.parts:
        return "a name with '..'"
    return None


def check_archive(path):
    """Refuse the tar archive ``path`` unless every member may be extracted."""
    try:
        with tarfile.open(path) as archive:
            members = archive.getmembers()
    except tarfile.TarError as err:
        raise UnsafeArchiveError(f"{path} is not a readable tar archive ({err})") from err
    bad = [(m.name, why) for m in members if (why := member_problem(m))]
    if bad:
        listed = "; ".join(f"{name!r}: {why}" for name, why in bad[:5])
        raise UnsafeArchiveError(f"refusing to extract {path}: {listed}")
    return members


def extract_archive(path, destination=None):
    """Extract the tar archive ``path`` into ``destination`` (a new temporary folder by
    default) after :func:`check_archive`; returns the folder that holds the model: the
    archive's one top folder if it has one (as fairseq does), else ``destination``."""
    members = check_archive(path)
    destination = destination or tempfile.mkdtemp(prefix="fairseq_ext_archive_")
    with tarfile.open(path) as archive:
        archive.extractall(destination, members=members, filter="data")
    tops = {PurePosixPath(m.name).parts[0] for m in members if PurePosixPath(m.name).parts}
    if len(tops) == 1:
        top = os.path.join(destination, tops.pop())
        if os.path.isdir(top):
            return top
    return destination


def safe_archive_loading(load_archive_file):
    """Wrap ``file_utils.load_archive_file`` (what ``hub_utils.from_pretrained`` calls on the
    model and data paths): a folder is used as it is, a tar archive is extracted by
    :func:`extract_archive` (every member checked first; the archive kept), a URL is refused
    (loading never touches the network)."""

    @functools.wraps(load_archive_file)
    def wrapped(archive_file):
        path = os.fspath(archive_file)
        if is_remote(path):
            raise ValueError(f"refusing to fetch {path}: loading a model never touches the network "
                             "(download it yourself and give the local path)")
        if os.path.isdir(path):
            return path
        if not os.path.isfile(path):
            raise FileNotFoundError(f"model or data path not found: {path}")
        return extract_archive(path)

    return wrapped


def local_files_only(cached_path):
    """Wrap ``file_utils.cached_path`` (how fairseq's BPEs and archives resolve a file name):
    a URL or remote path is refused, naming it; a local path is returned as fairseq does."""

    @functools.wraps(cached_path)
    def wrapped(url_or_filename, cache_dir=None):
        if is_remote(url_or_filename):
            raise ValueError(f"refusing to fetch {url_or_filename}: loading never touches the network "
                             "(give a local file)")
        return cached_path(url_or_filename, cache_dir)

    return wrapped
