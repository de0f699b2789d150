"""One contract for every storage backend: FileStore (file://) and S3Store (real S3, SeaweedFS).

`StoreContract` holds the tests; each backend's class at the bottom only says how to make a
store (fsspec's pattern). A new backend passes when a three-line subclass of it passes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from trainguard.store import errors
from trainguard.store.backends import Store, open_store
from trainguard.store.backends.local import FileStore
from trainguard.store.backends.s3 import S3Store

MakeStore = Callable[..., Store]


class StoreContract:
    """The behaviour every `Store` promises. Subclasses provide the `make_store` fixture."""

    @pytest.fixture
    def store(self, make_store: MakeStore) -> Store:
        return make_store("run")

    def test_store_satisfies_the_protocol(self, store: Store) -> None:
        assert isinstance(store, Store)

    def test_put_then_get_returns_the_same_bytes(self, store: Store) -> None:
        payload = bytes(range(256)) * 1000
        store.put("rank-00000/seg-a.npz", payload)
        store.put("empty", b"")
        assert store.get("rank-00000/seg-a.npz") == payload
        assert store.get("empty") == b""

    def test_put_replaces_an_existing_object(self, store: Store) -> None:
        store.put("k", b"first")
        store.put("k", b"second")
        assert store.get("k") == b"second"

    def test_get_of_a_missing_key_raises_not_found_naming_the_key(self, store: Store) -> None:
        with pytest.raises(errors.NotFound, match="rank-00007/nothing-here"):
            store.get("rank-00007/nothing-here")

    def test_exists_tells_objects_from_missing_keys_and_prefixes(self, store: Store) -> None:
        store.put("a/b", b"1")
        assert store.exists("a/b")
        assert not store.exists("a/c")
        assert not store.exists("a")  # a "folder" is not an object

    def test_delete_removes_an_object_and_ignores_a_missing_one(self, store: Store) -> None:
        store.put("a/b", b"1")
        store.delete("a/b")
        assert not store.exists("a/b")
        assert "a/b" not in store.list()
        store.delete("a/b")  # idempotent

    def test_list_returns_every_key_sorted_as_plain_strings(self, store: Store) -> None:
        # Not both "a/b" and "a/b/c": on file:// a key cannot also be a folder (the run format never needs it).
        keys = ["b", "a-b", "a/b", "a/c/d", "rank-00001/x", "rank-00000/seg-2", "rank-00000/seg-10", "A"]
        for k in keys:
            store.put(k, k.encode())
        assert store.list() == sorted(keys)

    def test_list_of_an_empty_or_missing_prefix_is_empty(self, store: Store) -> None:
        assert store.list() == []
        store.put("x/y", b"1")
        assert store.list("nothing/") == []

    def test_list_with_a_prefix_returns_only_keys_under_it(self, store: Store) -> None:
        for k in [
            "rank-00000/meta-000000.json",
            "rank-00000/seg-1",
            "rank-00000/seg-2",
            "rank-00001/seg-1",
            "run.json",
        ]:
            store.put(k, b"")
        assert store.list("rank-00000/") == [
            "rank-00000/meta-000000.json",
            "rank-00000/seg-1",
            "rank-00000/seg-2",
        ]
        assert store.list("rank-00000/seg-") == ["rank-00000/seg-1", "rank-00000/seg-2"]

    def test_list_start_after_returns_only_later_keys(self, store: Store) -> None:
        keys = [f"rank-00000/seg-{i:04d}" for i in range(6)]
        for k in keys:
            store.put(k, b"")
        assert store.list("rank-00000/", start_after=keys[2]) == keys[3:]
        assert store.list("rank-00000/", start_after=keys[-1]) == []
        # start_after need not be an existing key
        assert store.list("rank-00000/", start_after="rank-00000/seg-0002x") == keys[3:]
        assert store.list("rank-00000/", start_after="rank-00000/seg-") == keys

    def test_list_with_delimiter_returns_folders_and_top_objects(self, store: Store) -> None:
        for k in ["run.json", "rank-00000/seg-1", "rank-00000/deeper/x", "rank-00001/seg-1", "zz"]:
            store.put(k, b"")
        assert store.list("", delimiter="/") == ["rank-00000/", "rank-00001/", "run.json", "zz"]
        assert store.list("rank-00000/", delimiter="/") == ["rank-00000/deeper/", "rank-00000/seg-1"]

    def test_list_with_delimiter_and_start_after_returns_only_later_entries(self, store: Store) -> None:
        for k in ["a/1", "b/1", "c", "d/1"]:
            store.put(k, b"")
        assert store.list("", delimiter="/", start_after="b/") == ["c", "d/"]

    def test_list_returns_all_keys_across_pages(self, make_store: MakeStore) -> None:
        store = make_store("paged", list_page_size=7)
        keys = [f"rank-00000/seg-{i:04d}" for i in range(23)]
        for k in reversed(keys):
            store.put(k, b"")
        assert store.list() == keys
        assert store.list("rank-00000/", start_after=keys[4]) == keys[5:]
        assert store.list("", delimiter="/") == ["rank-00000/"]

    def test_stores_at_sibling_roots_do_not_see_each_other(self, make_store: MakeStore) -> None:
        a, b = make_store("run"), make_store("run-b")
        a.put("k", b"a")
        b.put("k", b"b")
        assert a.list() == ["k"] and b.list() == ["k"]
        assert a.get("k") == b"a"

    @pytest.mark.parametrize("bad", ["../escape", "/absolute", "a/../../b"])
    def test_keys_that_leave_the_root_are_refused(self, store: Store, bad: str) -> None:
        with pytest.raises(errors.StoreError, match="invalid key"):
            store.put(bad, b"x")

    def test_a_reader_never_sees_a_partial_object(self, store: Store) -> None:
        # Large objects, rewritten while another thread reads and lists: every read is whole.
        size = 2 * 1024 * 1024
        versions = [bytes([v]) * size for v in range(1, 7)]
        done = threading.Event()
        seen: list[int] = []
        bad: list[str] = []

        def read_loop() -> None:
            while not done.is_set():
                try:
                    data = store.get("rank-00000/big.npz")
                except errors.NotFound:
                    continue
                if len(data) != size or data.count(data[:1]) != size:
                    bad.append(f"partial or mixed object: {len(data)} bytes")
                seen.append(data[0])
                listed = store.list("rank-00000/")
                if listed != ["rank-00000/big.npz"]:
                    bad.append(f"listing shows {listed}")

        reader = threading.Thread(target=read_loop)
        reader.start()
        try:
            for v in versions:
                store.put("rank-00000/big.npz", v)
        finally:
            done.set()
            reader.join(30)
        assert not bad, bad[:3]
        assert seen, "the reader never saw the object"
        assert store.get("rank-00000/big.npz") == versions[-1]


class TestFileStore(StoreContract):
    @pytest.fixture
    def make_store(self, tmp_path: Any) -> MakeStore:
        def make(name: str, **_options: object) -> Store:
            # FileStore lists a directory at once; it has no pages, so the page size is ignored.
            return FileStore(f"file://{tmp_path / name}")

        return make

    def test_a_plain_path_opens_a_file_store(self, tmp_path: Any) -> None:
        store = open_store(str(tmp_path / "run"))
        assert isinstance(store, FileStore) and store.uri == f"file://{tmp_path / 'run'}"


class TestS3Store(StoreContract):
    @pytest.fixture
    def make_store(self, s3_bucket: str, s3_env: dict[str, str]) -> MakeStore:
        def make(name: str, **options: Any) -> Store:
            return open_store(f"s3://{s3_bucket}/{name}", **options)

        return make

    def test_the_s3_uri_alone_opens_an_s3_store_on_the_configured_endpoint(
        self, s3_bucket: str, s3_env: dict[str, str]
    ) -> None:
        store = open_store(f"s3://{s3_bucket}/some/prefix/")
        assert isinstance(store, S3Store)
        assert store.uri == f"s3://{s3_bucket}/some/prefix"
        assert store.endpoint_url == s3_env["AWS_ENDPOINT_URL"]
        store.put("k", b"v")
        assert store.get("k") == b"v"

    def test_a_bucket_root_without_prefix_works(self, s3_bucket: str, s3_env: dict[str, str]) -> None:
        store = open_store(f"s3://{s3_bucket}")
        store.put("run.json", b"{}")
        assert store.list("", delimiter="/") == ["run.json"]


def test_a_failed_file_put_leaves_no_temporary_behind(tmp_path: Any) -> None:
    store = FileStore(f"file://{tmp_path / 'run'}")
    store.put("d/x", b"1")
    with pytest.raises(errors.StoreError, match="cannot write"):
        store.put("d", b"2")  # "d" is a folder of other keys: the final rename fails
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["d"]
    assert store.list() == ["d/x"]
