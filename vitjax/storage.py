"""Files on a local disk or in an object store (gs://...), through one set of calls.

A path is a string, as users give it: a local path (relative or absolute) or a URL that
`etils.epath` takes (gs://bucket/dir, also s3://, az://). Local paths go through os and shutil
exactly as before; URLs go through epath, which reaches GCS through TensorFlow's gfile, or through
fsspec's gcsfs where TensorFlow is not used (EPATH_USE_TF=false). Orbax and TensorBoard take gs://
paths themselves; everything else vitjax reads or writes (run directories, sweeps, .npz files,
figures) goes through here.

An object store differs from a disk in three ways that matter to vitjax, and each is handled here:
    no rename      a "directory" is a prefix of object names; moving one copies every object and then
                   deletes the originals (`move`), which is not atomic (see there)
    no append      an object is written whole: `write_text` replaces it in one upload, which a reader
                   sees whole or not at all, so it needs no temporary file
    no flock       nothing locks an object the way fcntl.flock locks a file (vitjax/train_lock.py
                   says what the trainer does instead)

This module imports no vitjax module: vitjax/rundir.py and everything above it use it.
"""
import io
import os
import posixpath
import shutil

from etils import epath


def is_remote(path) -> bool:
    """Whether `path` is a URL (gs://bucket/...) rather than a local path."""
    return "://" in str(path)


def as_path(path) -> epath.Path:
    """`path` as an epath.Path: the object every epath call takes."""
    return epath.Path(path)


def join(base, *names) -> str:
    """`base`/`names`, as os.path.join for a local path, with '/' for a URL."""
    if is_remote(base):
        return posixpath.join(str(base), *map(str, names))
    return os.path.join(base, *names)


def absolute(path) -> str:
    """A local path made absolute (orbax needs absolute paths); a URL as it is, less a trailing '/'."""
    return str(path).rstrip("/") if is_remote(path) else os.path.abspath(path)


def dirname(path) -> str:
    return posixpath.dirname(absolute(path)) if is_remote(path) else os.path.dirname(path)


def basename(path) -> str:
    return posixpath.basename(absolute(path)) if is_remote(path) else os.path.basename(path)


def exists(path) -> bool:
    return as_path(path).exists() if is_remote(path) else os.path.exists(path)


def isdir(path) -> bool:
    """A local directory, or a prefix that some object's name starts with (an object store has no
    directories: one exists while something is in it)."""
    return as_path(path).is_dir() if is_remote(path) else os.path.isdir(path)


def listdir(path) -> list[str]:
    """The names in a directory (not their paths), as os.listdir gives them."""
    if is_remote(path):
        return [child.name for child in as_path(path).iterdir()]
    return os.listdir(path)


def makedirs(path) -> None:
    """os.makedirs(exist_ok=True); on an object store a directory needs no making, and epath's
    mkdir there makes nothing that lasts."""
    if is_remote(path):
        as_path(path).mkdir(parents=True, exist_ok=True)
    else:
        os.makedirs(path, exist_ok=True)


def nearest_existing(path) -> str:
    """A local `path` made absolute, or its nearest ancestor that exists."""
    existing = os.path.abspath(path)
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    return existing


def unwritable_ancestor(path) -> str | None:
    """The directory that stops this user making or writing the local `path` (itself, or its nearest
    existing ancestor: read-only, another owner's), or None when it can be written; a URL gives None
    (a bucket's permissions show at the first write)."""
    if is_remote(path):
        return None
    existing = nearest_existing(path)
    return None if os.access(existing, os.W_OK | os.X_OK) else existing


def read_bytes(path) -> bytes:
    return as_path(path).read_bytes()


def read_text(path) -> str:
    return as_path(path).read_text()


def readable(path):
    """What np.load and the like take for `path`: the local path itself, or for a URL the object's
    bytes in memory (zip archives such as .npz need to seek, which a streamed object cannot do cheaply)."""
    return io.BytesIO(read_bytes(path)) if is_remote(path) else path


def write_bytes(path, data: bytes) -> None:
    """Writes a whole file or object (one upload for a URL)."""
    as_path(path).write_bytes(data)


def write_text(path, text: str) -> None:
    """Writes a whole object in one upload: a reader sees the previous object or the new one.

    For URLs only: a local file written whole-or-not-at-all needs a temporary file and a rename
    (vitjax/rundir.py's `replace_file`)."""
    as_path(path).write_text(text)


def open_file(path, mode: str = "r"):
    """open() for a local path; epath's open for a URL (modes r, w, rb, wb: an object cannot be
    appended to)."""
    if is_remote(path):
        return as_path(path).open(mode)
    return open(path, mode)


def remove(path) -> None:
    if is_remote(path):
        as_path(path).unlink()
    else:
        os.remove(path)


def copy_file(source, target) -> None:
    """Copies one file (shutil.copy2 locally; a server-side copy on an object store)."""
    if is_remote(source) or is_remote(target):
        as_path(source).copy(as_path(target), overwrite=True)
    else:
        shutil.copy2(source, target)


def move(source, target) -> None:
    """Moves a file or a directory tree from `source` to `target` (whose parent exists).

    Locally a rename (shutil.move): atomic on one filesystem. An object store has no rename, so
    every object under `source` is copied (server-side) and the originals are deleted after all
    copies succeeded. That is not atomic: a crash in between leaves the data in both places, never
    in neither, and the next mover moves it again to a new target. Callers make each target name
    unique (vitjax's set-aside and history directories carry the time), so a repeated move never
    mixes two attempts.
    """
    if not (is_remote(source) or is_remote(target)):
        shutil.move(source, target)
        return
    src, dst = as_path(source), as_path(target)
    if not src.is_dir():
        src.copy(dst, overwrite=True)
        src.unlink()
        return
    for item in files_below(source):
        item.copy(dst / str(item.relative_to(src)), overwrite=True)
    src.rmtree()


def files_below(directory) -> list[epath.Path]:
    """Every file under `directory`, at any depth, sorted (epath refuses '**' globs on GCS; this walks).

    fsspec's walk names its directories without the scheme ('bucket/dir'), so it is put back."""
    scheme = str(directory).split("://")[0] + "://" if is_remote(directory) else ""
    found = []
    for root, _, names in as_path(directory).walk():
        root = str(root)
        if scheme and not root.startswith(scheme):
            root = scheme + root.lstrip("/")
        found += [as_path(root) / name for name in names]
    return sorted(found)
