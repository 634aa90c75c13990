"""Model archives extracted as data: each member a regular file or a directory with a relative
name that stays inside the destination, or the archive is refused (symlinks, hard links,
devices, FIFOs, sparse members, absolute names, ``..``, a URL, more bytes than
:data:`MAX_ARCHIVE_BYTES` or :data:`MAX_EXPANSION` times the archive) before anything is
written; then each file is copied counting the bytes it really holds, and the archive is kept.
Folders extracted while loading are removed when the load ends (:func:`extracted_folders_removed`,
around ``user_dir.from_pretrained``), or at exit.
:func:`safe_archive_loading` and :func:`local_files_only` replace fairseq's
``load_archive_file`` and ``cached_path``: nothing is fetched while loading.
"""

import atexit
import contextlib
import functools
import logging
import os
import shutil
import tarfile
import tempfile
from pathlib import PurePosixPath

from .config_schema import is_remote

logger = logging.getLogger(__name__)

#: The most bytes an archive may extract to (BART-large with its dictionary is 1.9 GB).
MAX_ARCHIVE_BYTES = 16 << 30

#: The most an archive may expand: weights compress little (measured about 1.1x), dictionaries
#: about 4x; a member that grows more is a bomb, not a model.
MAX_EXPANSION = 20

#: Below this, an archive may expand as much as it likes (small text files compress well).
SMALL_ARCHIVE_BYTES = 1 << 20

_CHUNK = 1 << 20
_extracted = []  # folders extracted during the current load (extracted_folders_removed)


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
    if member.issparse():
        return "a sparse member (its header size is not the bytes it holds)"
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
    names = [PurePosixPath(m.name).parts for m in members]
    if len(set(names)) != len(names):
        raise UnsafeArchiveError(f"refusing to extract {path}: a member name appears twice")
    declared = sum(m.size for m in members if m.isfile())
    limit = byte_limit(path)
    if declared > limit:
        raise UnsafeArchiveError(f"refusing to extract {path}: its members declare {declared} bytes, more than "
                                 f"{limit} ({_limit_reason(path)})")
    return members


def byte_limit(path):
    """The most bytes the archive ``path`` may extract to."""
    size = os.path.getsize(path)
    return min(MAX_ARCHIVE_BYTES, max(SMALL_ARCHIVE_BYTES, MAX_EXPANSION * size))


def _limit_reason(path):
    return (f"at most {MAX_EXPANSION} times the archive's {os.path.getsize(path)} bytes, "
            f"and at most {MAX_ARCHIVE_BYTES} in all")


def extract_archive(path, destination=None):
    """Extract the tar archive ``path`` into ``destination`` (a new temporary folder by
    default) after :func:`check_archive`; returns the folder that holds the model: the
    archive's one top folder if it has one (as fairseq does), else ``destination``."""
    members = check_archive(path)
    made = destination is None
    destination = destination or tempfile.mkdtemp(prefix="fairseq_ext_archive_")
    if made:
        _extracted.append(destination)
    try:
        _copy_members(path, members, destination)
    except BaseException:
        if made:
            shutil.rmtree(destination, ignore_errors=True)
        raise
    tops = {PurePosixPath(m.name).parts[0] for m in members if PurePosixPath(m.name).parts}
    if len(tops) == 1:
        top = os.path.join(destination, tops.pop())
        if os.path.isdir(top):
            return top
    return destination


def _copy_members(path, members, destination):
    """Write each checked member under ``destination``, counting the bytes the archive really
    yields: past :func:`byte_limit` (or a member longer than its header) the extraction stops."""
    limit, written = byte_limit(path), 0
    with tarfile.open(path) as archive:
        for member in members:
            target = os.path.join(destination, *PurePosixPath(member.name).parts)
            if member.isdir():
                os.makedirs(target, exist_ok=True)
                continue
            os.makedirs(os.path.dirname(target), exist_ok=True)
            source = archive.extractfile(member)
            with open(target, "xb") as out:
                while chunk := source.read(_CHUNK):
                    written += len(chunk)
                    if written > limit:
                        raise UnsafeArchiveError(f"refusing to extract {path}: it yields more than {limit} "
                                                 f"bytes ({_limit_reason(path)}), at {member.name!r}")
                    out.write(chunk)


@contextlib.contextmanager
def extracted_folders_removed():
    """Remove, when the block ends, every folder an archive was extracted to inside it."""
    start = len(_extracted)
    try:
        yield
    finally:
        while len(_extracted) > start:
            folder = _extracted.pop()
            shutil.rmtree(folder, ignore_errors=True)
            logger.info(f"removed the extracted archive folder {folder}")


@atexit.register
def _remove_left_folders():
    """Folders extracted outside :func:`extracted_folders_removed` (fairseq's own
    ``Model.from_pretrained``, whose hub reads the codec after the load) go at exit."""
    for folder in _extracted:
        shutil.rmtree(folder, ignore_errors=True)


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
