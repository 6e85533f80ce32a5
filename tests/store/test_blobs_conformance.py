"""One conformance suite for the index store's storage layer (:mod:`lakesieve.store.blobs`).

Every semantic test runs on :class:`LocalBlobs` (a temporary folder) and on
:class:`ObjectBlobs` against moto's S3 server on 127.0.0.1 (:mod:`tests.s3_server`):
read, create-only, put, compare-and-swap, listing, delete and size mean the same
on both. The object store's retries are driven through a fake ``obstore.put``/
``obstore.get`` that answers S3's ``409 ConditionalRequestConflict`` (or a 503, or
a time-out) before the real call.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import obstore
import pytest
from lakesieve.errors import IndexCorruptError, OptionError, StoreWriteError
from lakesieve.store.blobs import (
    BlobNotFound,
    BlobReadError,
    Blobs,
    CreateOnlyUnsupportedError,
    LocalBlobs,
    ObjectBlobs,
    open_blobs,
    probe_create_only,
)
from obstore.exceptions import AlreadyExistsError, GenericError, PreconditionError

from tests.s3_server import S3Server, moto_s3

#: S3's answer to a conditional write that overlaps another on the same key, as obstore shows it
CONFLICT_409 = (
    "Object at location {key} already exists: Error performing PUT http://127.0.0.1/{key} in "
    '12ms - Server returned non-2xx status code: 409 Conflict: <?xml version="1.0"?>\n'
    "<Error><Code>ConditionalRequestConflict</Code><Message>A conflicting conditional operation "
    "is currently in progress against this resource.</Message></Error>\n\nDebug source:\n..."
)
BUSY_503 = (
    "Generic S3 error: Error performing GET http://127.0.0.1/{key} in 5ms, after 3 retries - "
    "Server returned non-2xx status code: 503 Service Unavailable: <Error><Code>SlowDown</Code>"
    "</Error>\n\nDebug source:\n..."
)


@pytest.fixture(scope="session")
def s3() -> Iterator[S3Server]:
    """One moto S3 server for the session; tests keep apart by prefix."""
    with moto_s3() as server:
        yield server


@pytest.fixture(params=["local", "s3"])
def blobs(request: pytest.FixtureRequest, tmp_path: Path) -> Blobs:
    """A fresh, empty store of each kind."""
    if request.param == "local":
        return LocalBlobs(tmp_path / "blobs")
    server: S3Server = request.getfixturevalue("s3")
    return ObjectBlobs(server.url(), server.options)


@pytest.fixture
def s3_blobs(s3: S3Server) -> ObjectBlobs:
    """A fresh prefix on the moto server, with quick retries."""
    out = ObjectBlobs(s3.url(), s3.options)
    out.backoff_s = 0.001
    return out


def one_line(exc: pytest.ExceptionInfo[BaseException]) -> str:
    text = str(exc.value)
    assert "\n" not in text, text
    return text


# ------------------------------------------------------------------ semantics on both


def test_read_create_put_delete_size(blobs: Blobs) -> None:
    with pytest.raises(BlobNotFound) as missing:
        blobs.read("a/b.json")
    assert isinstance(missing.value, FileNotFoundError)
    assert "a/b.json" in one_line(missing)
    assert blobs.size("a/b.json") is None

    assert blobs.create("a/b.json", b"first") is True
    assert blobs.create("a/b.json", b"second") is False  # create-only: no exception
    assert blobs.read("a/b.json") == b"first"  # the first writer's bytes are kept
    assert blobs.size("a/b.json") == 5

    blobs.put("a/b.json", b"replaced!")  # put overwrites
    assert blobs.read("a/b.json") == b"replaced!"
    assert blobs.size("a/b.json") == 9
    blobs.put("data/x.arrow", b"")
    assert blobs.read("data/x.arrow") == b""
    assert blobs.size("data/x.arrow") == 0

    blobs.delete("a/b.json")
    blobs.delete("a/b.json")  # a missing key is fine
    blobs.delete("never/was")
    with pytest.raises(FileNotFoundError):
        blobs.read("a/b.json")
    assert blobs.size("a/b.json") is None
    assert blobs.create("a/b.json", b"again") is True  # a deleted key can be created again


def test_bytes_round_trip(blobs: Blobs) -> None:
    data = bytes(range(256)) * 4096  # 1 MiB, every byte value
    assert blobs.create("big.bin", data)
    assert blobs.read("big.bin") == data
    assert blobs.read_versioned("big.bin")[0] == data
    assert blobs.size("big.bin") == len(data)


def test_list(blobs: Blobs) -> None:
    assert blobs.list() == []
    assert blobs.list("_log") == []
    for key in (
        "_log/00000000000000000001.json",
        "_log/00000000000000000000.json",
        "_log/_head.json",
    ):
        assert blobs.create(key, b"{}")
        assert key in blobs.list("_log")  # listed as soon as the create returned
    blobs.put("data/idx/s1/f.arrow", b"x")
    blobs.put("_logs_old/x.json", b"x")  # shares a name prefix, not the folder
    assert blobs.list("_log") == [
        "_log/00000000000000000000.json",
        "_log/00000000000000000001.json",
        "_log/_head.json",
    ]
    assert blobs.list("_log/") == blobs.list("_log")
    assert blobs.list("data") == ["data/idx/s1/f.arrow"]
    assert blobs.list("data/idx") == ["data/idx/s1/f.arrow"]
    assert blobs.list("data/idx/s1/f.arrow") == []  # a key is not a folder
    assert blobs.list("nothing/here") == []
    assert blobs.list() == sorted(blobs.list("_log") + blobs.list("data") + ["_logs_old/x.json"])
    blobs.delete("_log/_head.json")
    assert "_log/_head.json" not in blobs.list("_log")


@pytest.mark.parametrize("key", ["", "/a", "a/", "a//b", "../x", "a/./b", "a/../b", "a\\b"])
def test_bad_keys_are_refused(blobs: Blobs, key: str) -> None:
    with pytest.raises(ValueError, match="bad blob key"):
        blobs.create(key, b"x")
    with pytest.raises(ValueError, match="bad blob key"):
        blobs.read(key)


def test_create_race_has_one_winner_per_key(blobs: Blobs) -> None:
    keys = [f"_log/{n:020d}.json" for n in range(25)]
    start = threading.Barrier(8)

    def writer(i: int) -> list[str]:
        start.wait()
        return [key for key in keys if blobs.create(key, f"writer {i}".encode())]

    with ThreadPoolExecutor(8) as pool:
        won = list(pool.map(writer, range(8)))
    winners = Counter(key for keys_won in won for key in keys_won)
    assert winners == dict.fromkeys(keys, 1)  # exactly one winner per key
    for i, keys_won in enumerate(won):
        for key in keys_won:
            assert blobs.read(key) == f"writer {i}".encode()  # the winner's bytes are kept
    assert blobs.list("_log") == keys


def test_compare_and_swap(blobs: Blobs) -> None:
    blobs.put("_log/_head.json", b"v1")
    data, tag = blobs.read_versioned("_log/_head.json")
    assert data == b"v1"
    assert blobs.swap("_log/_head.json", b"v2", tag) is True
    assert blobs.swap("_log/_head.json", b"v3", tag) is False  # stale tag: refused
    assert blobs.read("_log/_head.json") == b"v2"
    data, fresh = blobs.read_versioned("_log/_head.json")
    assert (data, fresh != tag) == (b"v2", True)
    blobs.put("_log/_head.json", b"v9")  # a write between read and swap makes the tag stale
    assert blobs.swap("_log/_head.json", b"v3", fresh) is False
    assert blobs.read("_log/_head.json") == b"v9"
    with pytest.raises(BlobNotFound):
        blobs.read_versioned("missing")
    assert blobs.swap("missing", b"x", tag) is False
    assert blobs.size("missing") is None


def test_swap_race_loses_no_update(blobs: Blobs) -> None:
    blobs.put("counter", b"0")

    def bump(_: int) -> int:
        tries = 0
        while True:
            tries += 1
            data, tag = blobs.read_versioned("counter")
            if blobs.swap("counter", str(int(data) + 1).encode(), tag):
                return tries

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(bump, range(12)))
    assert blobs.read("counter") == b"12"


def test_probe_create_only_passes_and_cleans_up(blobs: Blobs) -> None:
    probe_create_only(blobs)
    assert blobs.list("_probe") == []


def test_describe_and_url_of(blobs: Blobs) -> None:
    assert "\n" not in blobs.describe()
    assert blobs.url in blobs.describe()
    assert blobs.url_of("_log/x.json") == blobs.url.rstrip("/") + "/_log/x.json"


# ------------------------------------------------------------------ stores that lie


class OverwritingBlobs(LocalBlobs):
    """A store without put-if-absent: create overwrites and says it won."""

    def create(self, key: str, data: bytes) -> bool:
        self.put(key, data)
        return True


def test_probe_refuses_a_store_whose_create_overwrites(tmp_path: Path) -> None:
    blobs = OverwritingBlobs(tmp_path)
    with pytest.raises(CreateOnlyUnsupportedError) as refused:
        probe_create_only(blobs)
    text = one_line(refused)
    assert isinstance(refused.value, StoreWriteError)
    assert str(tmp_path) in text and "no create-only writes" in text
    assert blobs.list() == []  # the probe is deleted


def test_probe_refuses_an_s3_store_that_ignores_conditions(
    s3_blobs: ObjectBlobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An S3-compatible store without conditional writes: every put simply overwrites."""
    real_put = obstore.put
    monkeypatch.setattr(obstore, "put", lambda store, key, data, **_: real_put(store, key, data))
    with pytest.raises(CreateOnlyUnsupportedError) as refused:
        probe_create_only(s3_blobs)
    assert s3_blobs.url in one_line(refused)
    assert s3_blobs.list() == []


# ------------------------------------------------------------------ retries (object store)


def flaky(
    real: Callable[..., Any], error: Callable[[str], BaseException], times: int
) -> Callable[..., Any]:
    """``real``, failing with ``error(key)`` the first ``times`` calls (-1: always)."""
    calls = {"n": 0}

    def call(store: Any, key: str, *args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if times < 0 or calls["n"] <= times:
            raise error(key)
        return real(store, key, *args, **kwargs)

    call.calls = calls  # type: ignore[attr-defined]
    return call


def test_a_409_conflict_is_retried(s3_blobs: ObjectBlobs, monkeypatch: pytest.MonkeyPatch) -> None:
    put = flaky(obstore.put, lambda key: AlreadyExistsError(CONFLICT_409.format(key=key)), 1)
    monkeypatch.setattr(obstore, "put", put)
    assert s3_blobs.create("_log/0.json", b"mine") is True
    assert put.calls["n"] == 2  # type: ignore[attr-defined]
    assert s3_blobs.read("_log/0.json") == b"mine"
    assert s3_blobs.create("_log/0.json", b"other") is False  # a real "exists" is not retried


def test_a_409_on_a_swap_is_retried(s3_blobs: ObjectBlobs, monkeypatch: pytest.MonkeyPatch) -> None:
    s3_blobs.put("head", b"1")
    _, tag = s3_blobs.read_versioned("head")
    put = flaky(obstore.put, lambda key: PreconditionError(CONFLICT_409.format(key=key)), 2)
    monkeypatch.setattr(obstore, "put", put)
    assert s3_blobs.swap("head", b"2", tag) is True
    assert put.calls["n"] == 3  # type: ignore[attr-defined]
    assert s3_blobs.swap("head", b"3", tag) is False  # stale: refused, not retried
    assert put.calls["n"] == 4  # type: ignore[attr-defined]


def test_a_conflict_that_never_ends_is_one_line(
    s3_blobs: ObjectBlobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    put = flaky(obstore.put, lambda key: AlreadyExistsError(CONFLICT_409.format(key=key)), -1)
    monkeypatch.setattr(obstore, "put", put)
    with pytest.raises(StoreWriteError) as failed:
        s3_blobs.create("_log/0.json", b"mine")
    text = one_line(failed)
    assert s3_blobs.url_of("_log/0.json") in text
    assert "409 Conflict (ConditionalRequestConflict)" in text
    assert f"({s3_blobs.attempts} attempts)" in text
    assert put.calls["n"] == s3_blobs.attempts  # type: ignore[attr-defined]


def test_a_busy_store_is_retried_then_one_line(
    s3_blobs: ObjectBlobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    s3_blobs.put("k", b"v")
    monkeypatch.setattr(obstore, "get", flaky(obstore.get, lambda k: GenericError(BUSY_503), 2))
    assert s3_blobs.read("k") == b"v"
    monkeypatch.setattr(obstore, "get", flaky(obstore.get, lambda k: GenericError(BUSY_503), -1))
    with pytest.raises(BlobReadError) as failed:
        s3_blobs.read("k")
    assert "503 Service Unavailable (SlowDown)" in one_line(failed)
    assert s3_blobs.url_of("k") in str(failed.value)


def test_a_create_that_landed_before_a_time_out_counts_as_won(
    s3_blobs: ObjectBlobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_put = obstore.put
    calls = []

    def lands_then_times_out(store: Any, key: str, data: bytes, **kwargs: Any) -> Any:
        calls.append(key)
        result = real_put(store, key, data, **kwargs)
        if len(calls) == 1:
            raise TimeoutError("operation timed out")
        return result

    monkeypatch.setattr(obstore, "put", lands_then_times_out)
    assert s3_blobs.create("_log/0.json", b"mine") is True  # the retry finds its own bytes
    assert len(calls) == 2
    monkeypatch.setattr(obstore, "put", real_put)
    assert s3_blobs.create("_log/0.json", b"theirs") is False


def test_a_409_that_means_exists_is_not_retried(
    s3_blobs: ObjectBlobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Azure answers a create of an existing blob with 409 BlobAlreadyExists: not S3's conflict."""
    exists = (
        "Object at location {key} already exists: Server returned non-2xx status code: 409 "
        "Conflict: <Error><Code>BlobAlreadyExists</Code></Error>"
    )
    put = flaky(obstore.put, lambda key: AlreadyExistsError(exists.format(key=key)), -1)
    monkeypatch.setattr(obstore, "put", put)
    assert s3_blobs.create("_log/0.json", b"mine") is False
    assert put.calls["n"] == 1  # type: ignore[attr-defined]


def test_a_create_obstore_retried_after_it_landed_counts_as_won(
    s3_blobs: ObjectBlobs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """obstore retried a PUT after a 503 that had landed; its retry then met the key taken."""
    real_put = obstore.put
    retried_412 = (
        "Object at location {key} already exists: Error performing PUT http://127.0.0.1/{key} in "
        "2s, after 1 retries, max_retries: 3, retry_timeout: 60s - Server returned non-2xx status "
        "code: 412 Precondition Failed: <Error><Code>PreconditionFailed</Code></Error>"
    )

    def lands_then_says_exists(store: Any, key: str, data: bytes, **kwargs: Any) -> Any:
        real_put(store, key, data, **kwargs)
        raise AlreadyExistsError(retried_412.format(key=key))

    monkeypatch.setattr(obstore, "put", lands_then_says_exists)
    assert s3_blobs.create("_log/0.json", b"mine") is True
    assert s3_blobs.read("_log/0.json") == b"mine"


def test_an_unreachable_store_is_one_line() -> None:
    closed = {
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9",  # discard port: nothing listens
        "AWS_ALLOW_HTTP": "true",
        "AWS_ACCESS_KEY_ID": "x",
        "AWS_SECRET_ACCESS_KEY": "y",
        "AWS_REGION": "us-east-1",
        "AWS_CONNECT_TIMEOUT": "1s",
    }
    blobs = ObjectBlobs("s3://nowhere/idx", closed)
    blobs.attempts, blobs.backoff_s = 2, 0.001
    with pytest.raises(BlobReadError) as failed:
        blobs.read("_log/_head.json")
    assert "s3://nowhere/idx/_log/_head.json" in one_line(failed)
    with pytest.raises(StoreWriteError) as refused:
        blobs.create("_log/0.json", b"x")
    assert "s3://nowhere/idx/_log/0.json" in one_line(refused)


def test_a_missing_bucket_is_an_error_not_a_missing_key(s3: S3Server) -> None:
    blobs = ObjectBlobs("s3://lakesieve-no-such-bucket/idx", s3.options)
    with pytest.raises(StoreWriteError) as refused:
        blobs.create("_log/0.json", b"x")
    assert "NoSuchBucket" in one_line(refused)
    assert "s3://lakesieve-no-such-bucket/idx/_log/0.json" in str(refused.value)
    with pytest.raises(BlobReadError, match="NoSuchBucket"):
        blobs.read("_log/0.json")
    with pytest.raises(BlobReadError, match="NoSuchBucket"):
        blobs.list("_log")


# ------------------------------------------------------------------ local specifics


def test_local_leaves_no_temporary_files(tmp_path: Path) -> None:
    blobs = LocalBlobs(tmp_path)
    blobs.create("a/k", b"1")
    blobs.create("a/k", b"2")
    blobs.put("a/j", b"3")
    _, tag = blobs.read_versioned("a/j")
    blobs.swap("a/j", b"4", tag)
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["j", "k"]
    assert blobs.list() == ["a/j", "a/k"]


def test_local_refuses_links(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_bytes(b"s")
    blobs = LocalBlobs(tmp_path / "root")
    blobs.put("x", b"1")
    (tmp_path / "root" / "data").symlink_to(outside)
    (tmp_path / "root" / "file").symlink_to(outside / "secret")
    with pytest.raises(IndexCorruptError, match="symbolic link"):
        blobs.read("data/secret")
    with pytest.raises(IndexCorruptError, match="symbolic link"):
        blobs.read("file")
    with pytest.raises(IndexCorruptError, match="symbolic link"):
        blobs.list("data")
    assert blobs.list() == ["x"]  # links are not listed
    assert blobs.create("file", b"new") is False  # never written through
    assert (outside / "secret").read_bytes() == b"s"


# ------------------------------------------------------------------ open_blobs


def test_open_blobs_routes_paths_and_urls(tmp_path: Path, s3: S3Server) -> None:
    local = open_blobs(str(tmp_path))
    assert isinstance(local, LocalBlobs) and local.root == tmp_path
    assert isinstance(open_blobs(tmp_path), LocalBlobs)
    from_url = open_blobs(f"file://{tmp_path}/sub")
    assert isinstance(from_url, LocalBlobs) and from_url.root == tmp_path / "sub"
    assert open_blobs(f"file://localhost{tmp_path}").url == str(tmp_path)
    remote = open_blobs(s3.url("p/"), s3.options)
    assert isinstance(remote, ObjectBlobs) and remote.url == f"s3://{s3.bucket}/p"
    assert remote.create("k", b"v") and remote.read("k") == b"v"
    assert isinstance(open_blobs("s3a://bucket/p", s3.options), ObjectBlobs)
    assert isinstance(open_blobs("gs://bucket/p"), ObjectBlobs)
    azure = {"AZURE_STORAGE_ACCOUNT_NAME": "acct"}
    assert isinstance(open_blobs("az://container/p", azure), ObjectBlobs)
    assert isinstance(open_blobs("abfss://c@acct.dfs.core.windows.net/p"), ObjectBlobs)


@pytest.mark.parametrize("url", ["ftp://host/idx", "hdfs://nn:8020/idx", "http://host/idx"])
def test_open_blobs_refuses_unknown_schemes(url: str) -> None:
    with pytest.raises(ValueError) as refused:
        open_blobs(url)
    text = one_line(refused)
    assert url in text and "s3://" in text and "gs://" in text and "abfss://" in text


def test_open_blobs_refuses_bad_urls_and_options() -> None:
    with pytest.raises(ValueError, match="no bucket"):
        open_blobs("s3:///idx")
    with pytest.raises(ValueError, match="remote host"):
        open_blobs("file://server/share/idx")
    with pytest.raises(OptionError, match=r"(?i)not_an_option") as unknown:
        open_blobs("s3://bucket/idx", {"NOT_AN_OPTION": "1"})
    assert "s3://bucket/idx" in one_line(unknown)
