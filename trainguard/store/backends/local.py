"""`file://` backend: objects are files under a directory.

A put writes `<key>.tmp-<pid>-<n>` and renames it, so readers never see a partial object; listing
skips those temporary names. Used by local mode and by tests as the second conformant backend.
Unlike S3, a key cannot also be a "folder" of other keys (`a/b` and `a/b/c`); the run format
never needs that.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from trainguard.store import errors

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
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError as err:
            raise errors.NotFound(f"{self.uri}/{key} does not exist") from err
        except IsADirectoryError as err:
            raise errors.NotFound(f"{self.uri}/{key} is a directory, not an object") from err
        except PermissionError as err:
            raise errors.AccessDenied(f"cannot read {self.uri}/{key}: permission denied") from err
        except OSError as err:
            raise errors.StoreError(f"cannot read {self.uri}/{key}: {err.strerror or err}") from err

    def list(
        self, prefix: str = "", *, start_after: str | None = None, delimiter: str | None = None
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
        return keys

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def delete(self, key: str) -> None:
        try:
            self._path(key).unlink()
        except FileNotFoundError:
            pass
        except OSError as err:
            raise errors.StoreError(f"cannot delete {self.uri}/{key}: {err.strerror or err}") from err
