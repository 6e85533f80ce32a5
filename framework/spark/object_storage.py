"""Spark on tables in object storage: the Hadoop connector settings from the standard ones.

A table at ``s3://bucket/t`` is read by hudi-rs, delta-rs and pyiceberg with
the standard ``AWS_*`` settings (the environment, or a table's storage
options). Spark reads the same data files through Hadoop's S3A connector,
which has settings of its own (``fs.s3a.*``). :func:`hadoop_settings`
derives them from the same values, so one set of settings reaches every
reader; :func:`prepare` puts them on a session before a job reads a table,
and maps the ``s3://`` scheme to S3A (``fs.s3.impl``), so that the paths the
formats write are read as they are.

A Spark without the connector (pyspark's Hadoop client has no ``s3a``) is
named in one line before any work, with what to add.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from lakesieve.errors import LakesieveError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: URI schemes read through Hadoop's S3A connector.
S3_SCHEMES = frozenset({"s3", "s3a", "s3n"})
#: The connector class of each object-store scheme, and the artifacts that bring it.
CONNECTORS: dict[str, tuple[str, str]] = {
    "s3": (
        "org.apache.hadoop.fs.s3a.S3AFileSystem",
        "org.apache.hadoop:hadoop-aws:<your Hadoop version> with the "
        "software.amazon.awssdk:bundle it names (for pyspark 4.3: hadoop-aws:3.5.0, bundle:2.35.4)",
    ),
    "gs": (
        "com.google.cloud.hadoop.fs.gcs.GoogleHadoopFileSystem",
        "com.google.cloud.bigdataoss:gcs-connector (shaded)",
    ),
    "abfss": (
        "org.apache.hadoop.fs.azurebfs.SecureAzureBlobFileSystem",
        "org.apache.hadoop:hadoop-azure:<your Hadoop version>",
    ),
}


class ObjectStorageError(LakesieveError):
    """Spark cannot reach a table on object storage (no connector); names what to add."""


def store_scheme(path: str) -> str | None:
    """The object-store family of a table path (``s3``, ``gs``, ``abfss``), else ``None``."""
    scheme = urlparse(path).scheme.lower()
    if scheme in S3_SCHEMES:
        return "s3"
    if scheme in ("gs", "gcs"):
        return "gs"
    if scheme in ("abfs", "abfss", "az", "adl"):
        return "abfss"
    return None


def aws_settings(storage: Mapping[str, str], environ: Mapping[str, str]) -> dict[str, str]:
    """The ``AWS_*`` values in force (upper-case names): the environment's, then ``storage``'s."""
    values = {k.upper(): str(v) for k, v in environ.items() if k.upper().startswith("AWS_")}
    values.update({k.upper(): str(v) for k, v in storage.items()})
    return values


def hadoop_settings(
    storage: Mapping[str, str] | None = None, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The S3A settings that say what the ``AWS_*`` settings say.

    ``storage`` (a table's storage options, ``AWS_ENDPOINT_URL`` and the like)
    wins over ``environ`` (``os.environ`` when ``None``). Credentials not
    given are left to S3A's default chain (profiles, instance roles).
    """
    values = aws_settings(storage or {}, os.environ if environ is None else environ)
    out = {"fs.s3.impl": CONNECTORS["s3"][0], "fs.s3n.impl": CONNECTORS["s3"][0]}
    endpoint = (
        values.get("AWS_ENDPOINT_URL_S3")
        or values.get("AWS_ENDPOINT_URL")
        or values.get("AWS_ENDPOINT")
    )
    if endpoint:
        out["fs.s3a.endpoint"] = endpoint
        out["fs.s3a.path.style.access"] = "true"
        if endpoint.lower().startswith("http://"):
            out["fs.s3a.connection.ssl.enabled"] = "false"
    if values.get("AWS_VIRTUAL_HOSTED_STYLE_REQUEST", "").lower() == "false":
        out["fs.s3a.path.style.access"] = "true"
    region = values.get("AWS_REGION") or values.get("AWS_DEFAULT_REGION")
    if region:
        out["fs.s3a.endpoint.region"] = region
    key, secret = values.get("AWS_ACCESS_KEY_ID"), values.get("AWS_SECRET_ACCESS_KEY")
    if key and secret:
        out["fs.s3a.access.key"] = key
        out["fs.s3a.secret.key"] = secret
        token = values.get("AWS_SESSION_TOKEN")
        if token:
            out["fs.s3a.session.token"] = token
            out["fs.s3a.aws.credentials.provider"] = (
                "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
            )
        else:
            out["fs.s3a.aws.credentials.provider"] = (
                "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
            )
    return out


#: Prefix of a table option that is a storage option (``storage.AWS_REGION``).
STORAGE_PREFIX = "storage."


def storage_of(options: Mapping[str, str] | None) -> dict[str, str]:
    """The storage options among a table's options (their ``storage.`` prefix removed)."""
    return {
        k[len(STORAGE_PREFIX) :]: str(v)
        for k, v in (options or {}).items()
        if k.startswith(STORAGE_PREFIX)
    }


def prepare(spark: SparkSession, table_path: str, options: Mapping[str, str] | None = None) -> None:
    """Make ``spark`` able to read the table at ``table_path``; nothing for a local table.

    ``options`` are the table's options; its ``storage.`` keys win over the
    environment's ``AWS_*`` values.

    Raises:
        ObjectStorageError: the session's JVM has no connector for the table's
            store (one line: what to add, and how).
    """
    family = store_scheme(table_path)
    if family is None:
        return
    jsc = getattr(spark, "_jsc", None)
    if jsc is None:  # Spark Connect: the server's own settings decide
        return
    connector, artifact = CONNECTORS[family]
    try:
        spark._jvm.java.lang.Class.forName(connector)  # type: ignore[union-attr]
    except Exception:
        raise ObjectStorageError(
            f"table {table_path}: this Spark has no {family} connector ({connector}); add "
            f"{artifact} to the session (spark.jars.packages, or --jars / spark.jars)"
        ) from None
    if family != "s3":
        return
    conf = jsc.hadoopConfiguration()
    for key, value in hadoop_settings(storage_of(options)).items():
        conf.set(key, value)
