"""`file://` backend: objects are files under a directory.

A put writes `<key>.tmp-<pid>-<n>` and renames it, so readers never see a partial object; listing
skips those temporary names. A get reads regular files only, and none that a symbolic link places
outside the root: a FIFO would block the reader forever and a link to /dev/zero never end. Used by local mode and by tests as the second conformant backend.
Unlike S3, a key cannot also be a "folder" of other keys (`a/b` and `a/b/c`); the run format
never needs that.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from pathlib import Path

from trainguard.store import errors
from trainguard.store.backends import declaration

BACKEND = declaration.Backend(
    scheme="file",
    store_class="trainguard.store.backends.local.FileStore",
    uri_pattern=r"file:///.+",
    uri_example="file:///path",
)
"""`file://` needs no settings and no credentials: the directory must be reachable from every pod."""

_TMP = ".tmp-"


class FileStore:
    """Objects as files below a root directory."""

    def __init__(self, uri: str) -> None:
        if not uri.startswith("file://"):
            raise errors.StoreError(f"FileStore needs a file:// URI, got {uri!r}")
        self.uri = uri.rstrip("/")
        self.root = Path(uri[len("file://") :] or "/")
        self._tmp_counter = 0
        self._lock = threading.Lock()

    def _path(self, key: str) -> Path:
        if key.startswith("/") or ".." in key.split("/"):
            raise errors.StoreError(f"invalid key {key!r}: keys are relative and may not contain '..'")
        return self.root / key

    def put(self, key: str, data: bytes) -> None:
        path = self._path(key)
        with self._lock:
            self._tmp_counter += 1
            tmp = path.with_name(f"{path.name}{_TMP}{os.getpid()}-{self._tmp_counter}")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_bytes(data)
            os.replace(tmp, path)
        except OSError as err:
            tmp.unlink(missing_ok=True)  # a full disk must not leave a half-written temporary behind
            if isinstance(err, PermissionError):
                raise errors.AccessDenied(f"cannot write {self.uri}/{key}: permission denied") from err
            raise errors.StoreError(f"cannot write {self.uri}/{key}: {err.strerror or err}") from err

    def get(self, key: str) -> bytes:
        where = f"{self.uri}/{key}"
        try:
            real = os.path.realpath(self._path(key))
            root = os.path.realpath(self.root)
            if os.path.commonpath([real, root]) != root:
                raise errors.RefusedObject(
                    f"{where} is a symbolic link to {real}, outside the run root; it is not read"
                )
            # O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused just below);
            # O_NOFOLLOW: the path was resolved above, a link put in its place since is refused too
            fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError as err:
            raise errors.NotFound(f"{where} does not exist") from err
        except PermissionError as err:
            raise errors.AccessDenied(f"cannot read {where}: permission denied") from err
        except OSError as err:
            if err.errno == errno.ELOOP:
                raise errors.RefusedObject(
                    f"{where} became a symbolic link while it was read; it is not read"
                ) from err
            raise errors.StoreError(f"cannot read {where}: {err.strerror or err}") from err
        with os.fdopen(fd, "rb") as f:
            mode = os.fstat(f.fileno()).st_mode
            if stat.S_ISDIR(mode):
                raise errors.NotFound(f"{where} is a directory, not an object")
            if not stat.S_ISREG(mode):
                raise errors.RefusedObject(f"{where} is a {_kind(mode)}, not a regular file; it is not read")
            try:
                return f.read()
            except OSError as err:
                raise errors.StoreError(f"cannot read {where}: {err.strerror or err}") from err

    def list(
        self,
        prefix: str = "",
        *,
        start_after: str | None = None,
        delimiter: str | None = None,
        limit: int | None = None,
    ) -> list[str]:
        base = self.root / prefix if prefix.endswith("/") or not prefix else (self.root / prefix).parent
        if not base.is_dir():
            return []
        keys: list[str] = []
        if delimiter == "/":
            for entry in os.scandir(base):
                rel = os.path.relpath(entry.path, self.root).replace(os.sep, "/")
                if _TMP in entry.name:
                    continue
                keys.append(rel + "/" if entry.is_dir() else rel)
        else:
            for dirpath, _dirs, files in os.walk(base):
                for name in files:
                    if _TMP in name:
                        continue
                    keys.append(os.path.relpath(os.path.join(dirpath, name), self.root).replace(os.sep, "/"))
        keys = sorted(k for k in keys if k.startswith(prefix))
        if start_after is not None:
            keys = [k for k in keys if k > start_after]
        return keys if limit is None else keys[:limit]

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def delete(self, key: str) -> None:
        try:
            self._path(key).unlink()
        except FileNotFoundError:
            pass
        except OSError as err:
            raise errors.StoreError(f"cannot delete {self.uri}/{key}: {err.strerror or err}") from err


def _kind(mode: int) -> str:
    """Name the kind of a file that is not a regular file, for messages."""
    kinds = ((stat.S_ISFIFO, "FIFO"), (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"),
             (stat.S_ISSOCK, "socket"))  # fmt: skip
    return next((name for test, name in kinds if test(mode)), "special file")
