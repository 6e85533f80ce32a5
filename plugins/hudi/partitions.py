"""Partition paths of a Hudi table and the partition values they encode.

Hudi writes a partition path either hive-style (``city=paris/day=1``) or as
bare values (``paris/1``); ``hoodie.table.partition.fields`` names the fields.
Key generators may format one field into several path segments (the
time-based generator writes ``2023/04/01/12`` for one field), so a bare path
with one field maps to the whole path.
"""

from __future__ import annotations

from urllib.parse import unquote


def partition_fields(raw: str | None) -> tuple[str, ...]:
    """Parse ``hoodie.table.partition.fields``.

    Hudi 1.x custom key generators suffix a field with its kind
    (``ts:timestamp``); only the field name is kept.
    """
    if not raw:
        return ()
    return tuple(part.split(":", 1)[0].strip() for part in raw.split(",") if part.strip())


def location_of(partition_path: str, file_id: str) -> str:
    """The lakesieve location of a file group: ``<partition path>/<file id>``, or the id alone."""
    partition_path = partition_path.strip("/")
    return f"{partition_path}/{file_id}" if partition_path else file_id


def partition_values(
    partition_path: str,
    fields: tuple[str, ...],
    hive_style: bool | None,
    url_encoded: bool,
) -> dict[str, str]:
    """Map partition fields to their values (as strings) for one partition path.

    Args:
        partition_path: the path relative to the table root (``""`` when not partitioned).
        fields: the table's partition fields, in order.
        hive_style: whether segments are written ``field=value``; ``None`` (the
            table does not say) guesses from the path.
        url_encoded: whether values were URL-encoded when the path was written.

    Returns:
        ``{field: value}``; empty when the path cannot be matched to the fields.
    """
    path = partition_path.strip("/")
    if not path or not fields:
        return {}
    segments = path.split("/")

    def decode(value: str) -> str:
        return unquote(value) if url_encoded else value

    if hive_style or (hive_style is None and all("=" in seg for seg in segments)):
        out: dict[str, str] = {}
        for seg in segments:
            key, sep, value = seg.partition("=")
            if sep and key in fields:
                out[key] = decode(value)
        if out:
            return out
    if len(fields) == 1:
        return {fields[0]: decode(path)}
    if len(segments) == len(fields):
        return {field: decode(seg) for field, seg in zip(fields, segments, strict=True)}
    return {}
