"""Model archives (``.tar.gz`` and the like) extracted as data: each member a regular file or a
directory with a relative name that stays inside the destination, or the archive is refused.

fairseq's ``file_utils.load_archive_file`` (what ``from_pretrained`` calls on a model path)
runs ``tarfile.extractall`` on the archive as it is: a member named ``../x`` or ``/x``, a
symlink followed by a write through it, a hard link or a device lands anywhere the user can
write. :func:`extract_archive` checks every member before it writes any, then extracts with
Python's ``filter="data"`` as a second line. The archive itself is left in place (fairseq
deleted it and moved the extracted folder to its name).

==================  ===========================================================
a member may be      a regular file or a directory
its name may be      relative, without ``..``, NUL or a drive, inside the folder
refused              symlinks and hard links (wherever they point), devices,
                     FIFOs, absolute names, ``..``, a URL as the archive's path
==================  ===========================================================
"""

import os
import tarfile
import tempfile
from pathlib import PurePosixPath


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
