"""``.hoodie/hoodie.properties`` and ``.hoodie_partition_metadata`` for the writer.

Both are Java properties files. Hudi writes them with
``java.util.Properties.store``: two comment lines, then ``key=value`` lines
where ``:``, ``=``, ``#``, ``!`` and backslashes are escaped. The table
checksum is the CRC32 of ``"<database>.<table name>"``, as Hudi computes it.
"""

from __future__ import annotations

import datetime as dt
import zlib
from collections.abc import Mapping

from lakesieve.plugins.hudi.writer.storage import TableStorage

HOODIE_DIR = ".hoodie"
PROPERTIES_FILE = f"{HOODIE_DIR}/hoodie.properties"
PARTITION_METADATA_FILE = ".hoodie_partition_metadata"
DEFAULT_DATABASE = "default"

SIMPLE_KEYGEN = "org.apache.hudi.keygen.SimpleKeyGenerator"
COMPLEX_KEYGEN = "org.apache.hudi.keygen.ComplexKeyGenerator"
NONPARTITIONED_KEYGEN = "org.apache.hudi.keygen.NonpartitionedKeyGenerator"
SUPPORTED_KEYGENS = (SIMPLE_KEYGEN, COMPLEX_KEYGEN, NONPARTITIONED_KEYGEN)

# Table property keys (Hudi's names).
NAME = "hoodie.table.name"
TYPE = "hoodie.table.type"
VERSION = "hoodie.table.version"
LAYOUT_VERSION = "hoodie.timeline.layout.version"
RECORD_KEY = "hoodie.table.recordkey.fields"
PARTITION_FIELDS = "hoodie.table.partition.fields"
PRECOMBINE = "hoodie.table.precombine.field"
KEYGEN = "hoodie.table.keygenerator.class"
BASE_FORMAT = "hoodie.table.base.file.format"
POPULATE_META = "hoodie.populate.meta.fields"
HIVE_STYLE = "hoodie.datasource.write.hive_style_partitioning"
URL_ENCODE = "hoodie.datasource.write.partitionpath.urlencode"
DROP_PARTITION_COLUMNS = "hoodie.datasource.write.drop.partition.columns"
ARCHIVE_FOLDER = "hoodie.archivelog.folder"
DATABASE = "hoodie.database.name"
CREATE_SCHEMA = "hoodie.table.create.schema"
CHECKSUM = "hoodie.table.checksum"
# Write settings Hudi keeps in its write config; recorded here so that later
# commits of a bucketed table keep the same buckets.
BUCKET_FIELD = "hoodie.bucket.index.hash.field"
BUCKET_COUNT = "hoodie.bucket.index.num.buckets"
PAYLOAD_CLASS = "hoodie.compaction.payload.class"
#: The payload that makes readers merge by commit time: a later write wins,
#: whatever its precombine value (the writer's semantics, on both table types).
LATEST_PAYLOAD = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"
COPY_ON_WRITE = "COPY_ON_WRITE"
MERGE_ON_READ = "MERGE_ON_READ"

_ESCAPES = {"\\": "\\\\", ":": "\\:", "=": "\\=", "#": "\\#", "!": "\\!"}
_UNESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _escape(text: str, is_key: bool) -> str:
    out = []
    for i, ch in enumerate(text):
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch == " " and (is_key or i == 0):
            out.append("\\ ")
        elif ch in "\t\n\r\f":
            out.append("\\" + {"\t": "t", "\n": "n", "\r": "r", "\f": "f"}[ch])
        elif ord(ch) < 0x20 or ord(ch) > 0x7E:
            out.append(f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else ch)
        else:
            out.append(ch)
    return "".join(out)


def _unescape(text: str) -> str:
    out = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u" and i + 6 <= len(text):
                out.append(chr(int(text[i + 2 : i + 6], 16)))
                i += 6
                continue
            out.append(_UNESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def format_properties(props: Mapping[str, str], when: dt.datetime | None = None) -> bytes:
    """Serialise ``props`` the way ``java.util.Properties.store`` does."""
    when = when or dt.datetime.now(dt.UTC)
    lines = [
        f"#Properties saved on {when.strftime('%Y-%m-%dT%H:%M:%S.')}{when.microsecond // 1000:03d}Z",
        f"#{when.strftime('%a %b %d %H:%M:%S UTC %Y')}",
    ]
    lines += [f"{_escape(k, True)}={_escape(v, False)}" for k, v in props.items()]
    return ("\n".join(lines) + "\n").encode("latin-1")


def parse_properties(data: bytes) -> dict[str, str]:
    """Parse a Java properties file (one logical line per entry)."""
    text = data.decode("latin-1")
    logical: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.lstrip()
        if not pending and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending += line[:-1]
            continue
        logical.append(pending + line)
        pending = ""
    if pending:
        logical.append(pending)
    out: dict[str, str] = {}
    for line in logical:
        i = 0
        while i < len(line):
            if line[i] == "\\":
                i += 2
                continue
            if line[i] in "=: \t":
                break
            i += 1
        key = line[:i]
        rest = line[i:].lstrip(" \t")
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip(" \t")
        out[_unescape(key)] = _unescape(rest)
    return out


def table_checksum(table_name: str, database: str = DEFAULT_DATABASE) -> int:
    """Hudi's ``hoodie.table.checksum``: CRC32 of ``"<database>.<table>"``."""
    return zlib.crc32(f"{database}.{table_name}".encode())


def choose_keygen(record_key: tuple[str, ...], partition_by: tuple[str, ...]) -> str:
    """The key generator Hudi infers for these record key and partition fields."""
    if not partition_by:
        return NONPARTITIONED_KEYGEN
    if len(record_key) > 1 or len(partition_by) > 1:
        return COMPLEX_KEYGEN
    return SIMPLE_KEYGEN


def new_table_properties(
    table_name: str,
    record_key: tuple[str, ...],
    partition_by: tuple[str, ...],
    precombine: str | None,
    hive_style: bool,
    create_schema: str,
    bucket: tuple[str, int] | None,
    merge_on_read: bool = False,
) -> dict[str, str]:
    """The ``hoodie.properties`` of a new table of version 6.

    A merge-on-read table also records :data:`LATEST_PAYLOAD`, so that readers
    let a log block's row win over the base file's whatever the precombine
    values (hudi-rs otherwise orders by the precombine field).
    """
    props = {
        NAME: table_name,
        TYPE: MERGE_ON_READ if merge_on_read else COPY_ON_WRITE,
        VERSION: "6",
        LAYOUT_VERSION: "1",
        RECORD_KEY: ",".join(record_key),
    }
    if partition_by:
        props[PARTITION_FIELDS] = ",".join(partition_by)
    if precombine:
        props[PRECOMBINE] = precombine
    if merge_on_read:
        props[PAYLOAD_CLASS] = LATEST_PAYLOAD
    props.update(
        {
            KEYGEN: choose_keygen(record_key, partition_by),
            BASE_FORMAT: "PARQUET",
            POPULATE_META: "true",
            HIVE_STYLE: "true" if hive_style else "false",
            URL_ENCODE: "false",
            DROP_PARTITION_COLUMNS: "false",
            ARCHIVE_FOLDER: "archived",
            DATABASE: DEFAULT_DATABASE,
            CREATE_SCHEMA: create_schema,
        }
    )
    if bucket is not None:
        props[BUCKET_FIELD] = bucket[0]
        props[BUCKET_COUNT] = str(bucket[1])
    props[CHECKSUM] = str(table_checksum(table_name))
    return props


def read_table_properties(storage: TableStorage) -> dict[str, str] | None:
    """The table's properties, or ``None`` when there is no Hudi table at the path."""
    if not storage.is_file(PROPERTIES_FILE):
        return None
    return parse_properties(storage.read_bytes(PROPERTIES_FILE))


def create_table_layout(storage: TableStorage, props: Mapping[str, str]) -> None:
    """Create ``.hoodie`` with its sub-folders and write ``hoodie.properties``."""
    for sub in ("archived", ".temp", ".aux", ".schema"):
        storage.makedirs(f"{HOODIE_DIR}/{sub}")
    storage.write_atomic(
        PROPERTIES_FILE, format_properties(props), f"{HOODIE_DIR}/.temp/hoodie.properties.tmp"
    )


def partition_metadata(instant: str, depth: int, when: dt.datetime | None = None) -> bytes:
    """Content of a ``.hoodie_partition_metadata`` file."""
    when = when or dt.datetime.now(dt.UTC)
    lines = [
        "#partition metadata",
        f"#{when.strftime('%a %b %d %H:%M:%S UTC %Y')}",
        f"commitTime={instant}",
        f"partitionDepth={depth}",
    ]
    return ("\n".join(lines) + "\n").encode("latin-1")
