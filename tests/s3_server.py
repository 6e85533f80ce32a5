"""A local S3 for tests: moto's threaded server on 127.0.0.1, with a fresh bucket.

Use :func:`moto_s3` as a context manager, or make a pytest fixture of it in a
test module (session scope: the server starts in well under a second, but one
per session is enough; tests keep apart by prefix, :meth:`S3Server.url`)::

    @pytest.fixture(scope="session")
    def s3() -> Iterator[S3Server]:
        with moto_s3() as server:
            yield server

The server listens on 127.0.0.1 only, on a port the system picks (no race for
a "free" port), and holds its data in memory; nothing leaves the machine. The
credentials are fake: moto accepts any.

moto checks a conditional PutObject (``If-None-Match: *``, ``If-Match``) and
then writes, without a lock: two concurrent creates of one key can both succeed,
where S3 lets exactly one win. While the server runs, its PutObject handler is
serialised (:func:`atomic_conditional_puts`) so that it behaves as S3 does.

``moto_s3(process=True)`` runs the same server in a child process. Tests that
reach the server through delta-rs, hudi-rs or obstore while a Python thread
of this process must answer need it: a Rust call that keeps the interpreter
lock while it waits for the server deadlocks with a threaded server.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

#: the only address the server ever listens on
HOST = "127.0.0.1"
REGION = "us-east-1"
FAKE_KEY_ID = "lakesieve-test-key"
FAKE_SECRET = "lakesieve-test-secret"


class S3Server(NamedTuple):
    """A running moto S3 server and its bucket (unpacks as ``endpoint, bucket, options``).

    Attributes:
        endpoint: ``http://127.0.0.1:<port>``.
        bucket: a bucket created for this server.
        options: the storage options that reach it, by their environment-variable
            names (obstore's and deltalake's ``storage_options``).
    """

    endpoint: str
    bucket: str
    options: dict[str, str]

    def url(self, prefix: str = "") -> str:
        """``s3://<bucket>/<prefix>``; a fresh random prefix when none is given."""
        return f"s3://{self.bucket}/{prefix or uuid.uuid4().hex}"

    def client(self) -> Any:
        """A boto3 S3 client on this server."""
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id=FAKE_KEY_ID,
            aws_secret_access_key=FAKE_SECRET,
        )


@contextmanager
def atomic_conditional_puts() -> Iterator[None]:
    """Serialise moto's PutObject handler, making its conditional writes atomic as on S3."""
    from moto.s3.responses import S3Response

    real = S3Response.put_object
    lock = threading.Lock()

    def put_object(self: S3Response) -> Any:
        with lock:
            return real(self)

    S3Response.put_object = put_object  # type: ignore[method-assign]
    try:
        yield
    finally:
        S3Response.put_object = real  # type: ignore[method-assign]


#: The child process of ``moto_s3(process=True)``: the threaded server with atomic
#: conditional puts, its port printed on the first line, until stdin closes.
_CHILD = """
import logging, sys
sys.path.insert(0, sys.argv[1])
from s3_server import HOST, atomic_conditional_puts
from moto.server import ThreadedMotoServer
logging.getLogger("werkzeug").setLevel(logging.WARNING)
server = ThreadedMotoServer(ip_address=HOST, port=0, verbose=False)
server.start()
with atomic_conditional_puts():
    print(server.get_host_and_port()[1], flush=True)
    sys.stdin.read()
server.stop()
"""


def _options(endpoint: str) -> dict[str, str]:
    return {
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ALLOW_HTTP": "true",
        "AWS_ACCESS_KEY_ID": FAKE_KEY_ID,
        "AWS_SECRET_ACCESS_KEY": FAKE_SECRET,
        "AWS_REGION": REGION,
    }


@contextmanager
def _moto_process(bucket: str | None) -> Iterator[S3Server]:
    """The server in a child process (see the module docstring)."""
    from pathlib import Path

    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(Path(__file__).resolve().parent)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline().strip()
        assert line.isdigit(), f"moto's child process did not start (it printed {line!r})"
        endpoint = f"http://{HOST}:{line}"
        s3 = S3Server(endpoint, bucket or f"lakesieve-{uuid.uuid4().hex[:12]}", _options(endpoint))
        s3.client().create_bucket(Bucket=s3.bucket)
        yield s3
    finally:
        if child.stdin is not None:
            child.stdin.close()
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


@contextmanager
def moto_s3(bucket: str | None = None, process: bool = False) -> Iterator[S3Server]:
    """Start moto's S3 server on 127.0.0.1, create ``bucket`` (a fresh name by default), stop it after.

    With ``process=True`` the server runs in a child process (see the module docstring).

    Yields:
        the server's endpoint, bucket and storage options.
    """
    if process:
        with _moto_process(bucket) as s3:
            yield s3
        return
    from moto.server import ThreadedMotoServer

    # werkzeug logs every request at INFO; a test that fails shows enough without them
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    server = ThreadedMotoServer(ip_address=HOST, port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        assert host == HOST, f"moto listens on {host}, not {HOST}"
        endpoint = f"http://{HOST}:{port}"
        name = bucket or f"lakesieve-{uuid.uuid4().hex[:12]}"
        s3 = S3Server(endpoint, name, _options(endpoint))
        s3.client().create_bucket(Bucket=name)
        with atomic_conditional_puts():
            yield s3
    finally:
        server.stop()


def pyiceberg_catalog(s3: S3Server, folder: Any) -> Any:
    """A pyiceberg SQL catalog (its SQLite file in the local ``folder``) whose warehouse is on ``s3``.

    The writer's catalog of a test: lakesieve never sees it, and finds the
    tables by location.
    """
    from pyiceberg.catalog.sql import SqlCatalog

    return SqlCatalog(
        "writer",
        uri=f"sqlite:///{folder}/catalog.db",
        warehouse=f"s3://{s3.bucket}/wh",
        **{
            "s3.endpoint": s3.endpoint,
            "s3.access-key-id": s3.options["AWS_ACCESS_KEY_ID"],
            "s3.secret-access-key": s3.options["AWS_SECRET_ACCESS_KEY"],
            "s3.region": REGION,
        },
    )
