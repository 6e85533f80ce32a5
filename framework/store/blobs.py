"""Blobs: the one storage layer of the index store, on a local folder or an object store.

:class:`Blobs` has the operations the store's commit protocol needs: create-only writes,
puts, compare-and-swap, listings. :class:`LocalBlobs` keeps blobs in a folder, :class:`ObjectBlobs`
on S3, GCS or Azure through obstore's conditional writes; :func:`open_blobs` picks one for a
path or URL; :func:`probe_create_only` refuses a store without put-if-absent.
Errors are one line naming the path or URL: :class:`BlobNotFound` (a ``FileNotFoundError``),
:class:`~lakesieve.errors.StoreWriteError` (refused writes), :class:`BlobReadError`.
"""

from __future__ import annotations

import builtins
import contextlib
import errno
import hashlib
import json
import os
import random
import re
import stat
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import unquote, urlsplit

import obstore
from lakesieve.errors import IndexCorruptError, LakesieveError, OptionError, StoreWriteError
from lakesieve.store.errors import replace_file, write_error, write_new_file
from obstore.exceptions import AlreadyExistsError, PreconditionError, UnknownConfigurationKeyError
from obstore.store import AzureStore, GCSStore, S3Store

try:
    import fcntl
except ImportError:  # pragma: no cover - not a POSIX system: swaps are not locked
    fcntl = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from obstore.store import ObjectStore, RetryConfig

T = TypeVar("T")

#: URL schemes of object stores, with the obstore store that serves each.
OBJECT_SCHEMES: dict[str, Any] = {"s3": S3Store, "s3a": S3Store, "gs": GCSStore}
OBJECT_SCHEMES.update(dict.fromkeys(("az", "azure", "abfs", "abfss", "adl"), AzureStore))
#: Names below a local root that are LocalBlobs' own (temporary files, the swap lock).
_INTERNAL = ".blob-"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
#: obstore's HTTP client options (``AWS_ALLOW_HTTP`` ...); any other option is the store's.
_CLIENT_KEY = re.compile(
    r"(?:aws_|google_|azure_storage_|azure_)?(allow_http|allow_invalid_certificates|"
    r"(?:connect_|read_|pool_idle_)?timeout|http[12]_only|default_content_type|user_agent|"
    r"http2_keep_alive_\w+|pool_max_idle_per_host|proxy_\w+|randomize_addresses|root_certificate)"
)
#: obstore's own retries of one request (5xx, dropped connections), below this module's
_RETRY: RetryConfig = {"max_retries": 3, "retry_timeout": timedelta(seconds=60)}
_CONFLICT = re.compile(r"ConditionalRequestConflict")  # S3's 409; Azure's 409 means "exists"
_BUSY = re.compile(r"status code: (?:429|503)\b|SlowDown|ServiceUnavailable|TooManyRequests")
#: answers after which a request may have landed all the same (so may one obstore retried)
_LOST = re.compile(
    r"(?i)status code: 50[024]\b|timed out|deadline has elapsed|error sending request|connection "
    r"(?:reset|closed|aborted)|broken pipe|InternalError"
)
_RETRIED = re.compile(r"after [1-9]\d* retries")
_NO_BUCKET = re.compile(r"NoSuchBucket|ContainerNotFound|bucket does not exist")
_LINK = "index path {} is a symbolic link; lakesieve never follows links"


class BlobNotFound(FileNotFoundError):
    """No blob under the key; a ``FileNotFoundError``, so callers may catch either."""


class BlobReadError(LakesieveError):
    """A read from the store failed (unreachable, forbidden, busy after retries); names the URL."""


class CreateOnlyUnsupportedError(StoreWriteError):
    """The store has no create-only writes, so two writers could both commit one log version."""


def check_key(key: str) -> builtins.list[str]:
    """The parts of ``key``; a ``ValueError`` unless it is a relative path of plain names."""
    parts = key.split("/")
    for part in parts:
        if part in ("", ".", "..") or part.startswith(_INTERNAL) or "\\" in part or "\0" in part:
            raise ValueError(f"bad blob key {key!r}: not a relative path of plain names")
    return parts


def _prefix_parts(prefix: str) -> builtins.list[str]:
    prefix = prefix.strip("/")
    return check_key(prefix) if prefix else []


class Blobs(ABC):
    """Byte strings under keys (relative paths of plain names joined by ``/``).

    * ``read(key)``: the bytes; :class:`BlobNotFound` when there are none.
    * ``create(key, data)``: write unless the key exists: ``False`` then, its bytes kept;
      of writers racing for one key exactly one gets ``True``.
    * ``put(key, data)``: write over what is there (for names no one else writes).
    * ``read_versioned(key)``: the bytes and an opaque tag of that version, and
      ``swap(key, data, tag)``: replace them if still that version, else ``False``.
    * ``list(prefix)``: the keys below the folder ``prefix`` (all for ``""``), sorted;
      a key is listed as soon as its create returned.
    * ``delete(key)``: remove (a missing key is fine); ``size(key)``: bytes, or ``None``.
    """

    url: str  #: where the blobs are (a folder or an object-store URL), for messages
    kind = "blobs"

    @abstractmethod
    def read(self, key: str) -> bytes: ...
    @abstractmethod
    def create(self, key: str, data: bytes) -> bool: ...
    @abstractmethod
    def put(self, key: str, data: bytes) -> None: ...
    @abstractmethod
    def read_versioned(self, key: str) -> tuple[bytes, str]: ...
    @abstractmethod
    def swap(self, key: str, data: bytes, expected_tag: str) -> bool: ...
    @abstractmethod
    def list(self, prefix: str = "") -> builtins.list[str]: ...
    @abstractmethod
    def delete(self, key: str) -> None: ...
    @abstractmethod
    def size(self, key: str) -> int | None: ...

    def url_of(self, key: str) -> str:
        """The full path or URL of ``key``, for messages."""
        return f"{self.url.rstrip('/')}/{key}" if key else self.url

    def describe(self) -> str:
        """What and where the store is, in a few words (``local folder /x``, ``object store s3://b``)."""
        return f"{self.kind} {self.url}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"


class LocalBlobs(Blobs):
    """Blobs as files below a local folder (created when first written).

    Create writes a temporary file beside the key and hard-links it to the
    key's name, which fails if the name exists; put renames a temporary file
    over it; swap compares the content's SHA-256 under an ``flock`` of the root
    (local disks only). No path below the root may pass through a symbolic link.
    """

    kind = "local folder"

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(os.path.abspath(os.fspath(root)))
        self.url = str(self.root)

    def _path(self, key: str, *, folder: bool = False) -> Path:
        """The path of ``key``, refusing links among its folders (the last name is never followed)."""
        parts = _prefix_parts(key) if folder else check_key(key)
        current = self.root
        for part in parts if folder else parts[:-1]:
            current = current / part
            try:
                mode = os.lstat(current).st_mode
            except OSError:
                break
            if stat.S_ISLNK(mode):
                raise IndexCorruptError(_LINK.format(current))
        return self.root.joinpath(*parts)

    def _read_error(self, exc: OSError, path: Path) -> LakesieveError:
        if exc.errno == errno.ELOOP:
            return IndexCorruptError(_LINK.format(path))
        return BlobReadError(f"cannot read {path}: {(exc.strerror or str(exc)).lower()}")

    def read(self, key: str) -> bytes:
        path = self._path(key)
        try:
            with os.fdopen(os.open(path, os.O_RDONLY | _NOFOLLOW), "rb") as fh:
                return fh.read()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            raise BlobNotFound(f"no blob {path}") from None
        except OSError as exc:
            raise self._read_error(exc, path) from None

    def create(self, key: str, data: bytes) -> bool:
        """Write a temporary file and hard-link it to the key's name."""
        path = self._path(key)
        tmp = path.with_name(f"{_INTERNAL}tmp-{uuid.uuid4().hex}")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_new_file(tmp, data)
            try:
                os.link(tmp, path)
            except FileExistsError:
                return False
            return True
        except OSError as exc:
            raise write_error(exc, path) from None
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)

    def put(self, key: str, data: bytes) -> None:
        """Write a temporary file and rename it over the key's name."""
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            replace_file(path, path.with_name(f"{_INTERNAL}tmp-{uuid.uuid4().hex}"), data)
        except OSError as exc:
            raise write_error(exc, path) from None

    def read_versioned(self, key: str) -> tuple[bytes, str]:
        """The bytes and their SHA-256 (hex) as the tag."""
        data = self.read(key)
        return data, hashlib.sha256(data).hexdigest()

    def swap(self, key: str, data: bytes, expected_tag: str) -> bool:
        """Compare the content's SHA-256 and replace the file, under the root's ``flock``."""
        self._path(key)
        lock = self.root / f"{_INTERNAL}swap.lock"
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
        except OSError as exc:
            raise write_error(exc, lock) from None
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            with contextlib.suppress(BlobNotFound):
                if hashlib.sha256(self.read(key)).hexdigest() == expected_tag:
                    self.put(key, data)
                    return True
            return False
        finally:
            os.close(fd)  # releases the flock

    def list(self, prefix: str = "") -> builtins.list[str]:
        """The files below ``root/prefix`` (links and internal files left out), sorted."""
        out: builtins.list[str] = []
        stack = [(self._path(prefix, folder=True), "/".join(_prefix_parts(prefix)))]
        while stack:
            folder, rel = stack.pop()
            try:
                with os.scandir(folder) as entries:
                    for entry in entries:
                        key = f"{rel}/{entry.name}" if rel else entry.name
                        if entry.name.startswith(_INTERNAL):
                            continue
                        if entry.is_dir(follow_symlinks=False):
                            stack.append((Path(entry.path), key))
                        elif entry.is_file(follow_symlinks=False):
                            out.append(key)
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError as exc:
                raise self._read_error(exc, folder) from None
        return sorted(out)

    def delete(self, key: str) -> None:
        """Unlink the file (a link itself, never what it points to)."""
        path = self._path(key)
        try:
            with contextlib.suppress(FileNotFoundError, NotADirectoryError, IsADirectoryError):
                os.unlink(path)
        except OSError as exc:
            raise write_error(exc, path) from None

    def size(self, key: str) -> int | None:
        """The file's size; ``None`` when there is no file."""
        path = self._path(key)
        try:
            info = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise self._read_error(exc, path) from None
        if stat.S_ISLNK(info.st_mode):
            raise IndexCorruptError(_LINK.format(path))
        return info.st_size if stat.S_ISREG(info.st_mode) else None


def _summary(exc: BaseException) -> str:
    """The gist of an obstore error, in one line."""
    text = str(exc).split("Debug source:")[0]
    status = re.search(r"status code: (\d{3}[^:<\n]*)", text)
    if status:
        code = re.search(r"<Code>([^<]+)</Code>", text)
        return f"the store answered {status.group(1).strip()}" + (f" ({code[1]})" if code else "")
    first = (text.strip().splitlines() or [type(exc).__name__])[0]
    return first.rsplit(" - ", 1)[-1][:300]  # not obstore's "Error performing GET <url> in 12ms"


def _transient(exc: BaseException) -> str | None:
    """``conflict``, ``busy`` or ``lost`` (may have landed) for an answer worth retrying."""
    if isinstance(exc, (TimeoutError, ConnectionError)):
        return "lost"
    text = "" if isinstance(exc, FileNotFoundError) else str(exc).split("Debug source:")[0]
    kinds = (("conflict", _CONFLICT), ("busy", _BUSY), ("lost", _LOST))
    return next((kind for kind, pattern in kinds if pattern.search(text)), None)


def _open_store(url: str, options: dict[str, str]) -> ObjectStore:
    """obstore's store for ``url``: the environment's settings, overridden by ``options``."""
    config, client = dict[str, str](), dict[str, str]()
    for key, value in options.items():
        if (match := _CLIENT_KEY.fullmatch(key.lower())) is not None:
            client[match[1]] = str(value)
        else:
            config[key] = str(value)
    try:
        store: ObjectStore = OBJECT_SCHEMES[urlsplit(url).scheme.lower()].from_url(
            url, config=config or None, client_options=client or None, retry_config=_RETRY
        )
    except UnknownConfigurationKeyError as exc:
        raise OptionError(f"unknown option for the object store {url}: {_summary(exc)}") from None
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # obstore's errors, and a panic of its Rust code
        raise OptionError(
            f"cannot open the object store {url}: {_summary(exc)}; check its options and the "
            "AWS_*/GOOGLE_*/AZURE_* environment variables"
        ) from None
    return store


class ObjectBlobs(Blobs):
    """Blobs in an object store (S3, GCS, Azure) through obstore.

    Create is ``put(mode="create")`` (``If-None-Match: *``), swap a put on the
    tag's ``e_tag``/``version`` (``If-Match``). Transient answers (S3's ``409
    ConditionalRequestConflict``, ``503``, ``429``, time-outs) are retried with
    exponential backoff. After a try that may have landed (a time-out), a create or
    swap that then finds the key taken counts as won when it holds exactly its bytes.

    Args:
        url: ``s3://bucket/prefix``, ``gs://bucket/prefix``, ``az://container/prefix`` ...
        options: store and HTTP client options by their environment-variable names
            (``AWS_ENDPOINT_URL``, ``AWS_ALLOW_HTTP`` ...), over ``AWS_*``/``GOOGLE_*``/``AZURE_*``.
        store: an obstore store to use instead of opening ``url``.

    Raises:
        OptionError: an option obstore does not know, or the store cannot be set up.
    """

    kind = "object store"
    #: tries of one operation against transient answers, and the first pause (doubled each time)
    attempts, backoff_s = 4, 0.2

    def __init__(
        self, url: str, options: dict[str, str] | None = None, *, store: ObjectStore | None = None
    ) -> None:
        self.url = url.rstrip("/")
        self._store = store if store is not None else _open_store(self.url, options or {})

    def _request(self, what: str, key: str, call: Callable[[bool], T]) -> T:
        """``call(maybe_landed)``, retried on transient answers; one-line errors.

        ``maybe_landed``: an earlier try may have been written. A missing key raises
        :class:`BlobNotFound`; another failure :class:`BlobReadError` for ``read`` and
        ``list``, else :class:`~lakesieve.errors.StoreWriteError`.
        """
        if what != "list":
            check_key(key)
        delay, maybe_landed = self.backoff_s, False
        for attempt in range(1, self.attempts + 1):
            try:
                return call(maybe_landed)
            except Exception as exc:
                if isinstance(exc, FileNotFoundError) and not _NO_BUCKET.search(str(exc)):
                    raise BlobNotFound(f"no blob {self.url_of(key)}") from None
                kind = _transient(exc)
                if kind is None or attempt == self.attempts:
                    tries = f" ({attempt} attempts)" if attempt > 1 else ""
                    error = BlobReadError if what in ("read", "list") else StoreWriteError
                    raise error(
                        f"cannot {what} {self.url_of(key)}: {_summary(exc)}{tries}; check the "
                        "store's endpoint, credentials and permissions, then run this again"
                    ) from None
                maybe_landed = maybe_landed or kind == "lost"
                time.sleep(delay * (1 + random.random()))
                delay *= 2
        raise AssertionError("unreachable")  # pragma: no cover

    def _conditional_put(self, what: str, key: str, data: bytes, mode: Any) -> bool:
        """A put in ``mode``; ``False`` when its condition fails (unless it landed before)."""

        def attempt(maybe_landed: bool) -> bool:
            try:
                obstore.put(self._store, key, data, mode=mode)
            except (AlreadyExistsError, PreconditionError, FileNotFoundError) as exc:
                # S3's 409 arrives as "already exists" or "precondition"
                if _transient(exc) or _NO_BUCKET.search(str(exc)):
                    raise
                if not (maybe_landed or _RETRIED.search(str(exc))):
                    return False
                with contextlib.suppress(FileNotFoundError):
                    return bytes(obstore.get(self._store, key).bytes()) == data
                return False
            return True

        return self._request(what, key, attempt)

    def read(self, key: str) -> bytes:
        return self._request("read", key, lambda _: bytes(obstore.get(self._store, key).bytes()))

    def create(self, key: str, data: bytes) -> bool:
        """A conditional put (``If-None-Match: *``)."""
        return self._conditional_put("create", key, data, "create")

    def put(self, key: str, data: bytes) -> None:
        self._request("write", key, lambda _: obstore.put(self._store, key, data))

    def read_versioned(self, key: str) -> tuple[bytes, str]:
        """The bytes, and the object's ETag and version (from the same GET) as the tag."""

        def attempt(_: bool) -> tuple[bytes, str]:
            got = obstore.get(self._store, key)
            return bytes(got.bytes()), json.dumps([got.meta.get("e_tag"), got.meta.get("version")])

        return self._request("read", key, attempt)

    def swap(self, key: str, data: bytes, expected_tag: str) -> bool:
        """A conditional put on the tag's ETag and version (``If-Match``)."""
        try:
            e_tag, version = json.loads(expected_tag)
        except (TypeError, ValueError):
            raise ValueError(f"bad version tag {expected_tag!r} for {self.url_of(key)}") from None
        mode = {name: v for name, v in (("e_tag", e_tag), ("version", version)) if v is not None}
        return self._conditional_put("swap", key, data, mode)

    def list(self, prefix: str = "") -> builtins.list[str]:
        """The keys below the folder ``prefix``, sorted."""
        folder = "/".join(_prefix_parts(prefix))
        listing = lambda _: obstore.list(self._store, prefix=folder or None).collect()  # noqa: E731
        return sorted(meta["path"] for meta in self._request("list", folder, listing))

    def delete(self, key: str) -> None:
        with contextlib.suppress(BlobNotFound):
            self._request("delete", key, lambda _: obstore.delete(self._store, key))

    def size(self, key: str) -> int | None:
        """The object's size from a HEAD; ``None`` when it is missing."""
        try:
            return int(self._request("read", key, lambda _: obstore.head(self._store, key))["size"])
        except BlobNotFound:
            return None


def open_blobs(url_or_path: str | os.PathLike[str], options: dict[str, str] | None = None) -> Blobs:
    """The blobs at a folder or ``file://`` URL, or at a URL of :data:`OBJECT_SCHEMES`.

    ``options`` go to :class:`ObjectBlobs` (a folder ignores them). A ``ValueError``
    names an unsupported scheme, a remote ``file://`` host, or a missing bucket.
    """
    text = os.fspath(url_or_path)
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if not scheme or "://" not in text:
        return LocalBlobs(text)
    if scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise ValueError(f"index store URL {text} names a remote host; use a local path")
        return LocalBlobs(unquote(parts.path))
    if scheme in OBJECT_SCHEMES:
        if not parts.netloc:
            raise ValueError(f"index store URL {text} names no bucket or container")
        return ObjectBlobs(text, options)
    supported = ", ".join(f"{s}://" for s in ("file", *OBJECT_SCHEMES))
    raise ValueError(
        f"unsupported index store URL {text}: {scheme}:// is not one of a local path, {supported}"
    )


def probe_create_only(blobs: Blobs) -> None:
    """Refuse ``blobs`` unless it keeps the first of two creates of one key (put if absent).

    Writes a fresh key under ``_probe/`` twice, create-only, and deletes it again;
    raises :class:`CreateOnlyUnsupportedError` when the second create is not refused.
    """
    key = f"_probe/{uuid.uuid4().hex}"
    try:
        first = blobs.create(key, b"first")
        second = blobs.create(key, b"second")
        kept = blobs.read(key)
    finally:
        with contextlib.suppress(LakesieveError, OSError):
            blobs.delete(key)
    if first and not second and kept == b"first":
        return
    what = "overwrote the first" if kept != b"first" else "was not refused"
    raise CreateOnlyUnsupportedError(
        f"the index store {blobs.describe()} has no create-only writes: a second create of "
        f"{blobs.url_of(key)} {what}, so two writers could both commit one log version; use a "
        "store with conditional writes (S3, GCS, Azure, a local disk) or turn them on "
        "(AWS_CONDITIONAL_PUT=etag for an S3-compatible store)"
    )
