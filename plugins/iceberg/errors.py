"""Errors of the Iceberg plugin."""

from __future__ import annotations

from lakesieve.sdk import LakesieveError


class IcebergFeatureError(LakesieveError):
    """An Iceberg table uses a feature this plugin cannot honour; the message names the table and feature.

    Raised rather than return rows that equality deletes or deletion vectors
    would hide, or read columns a rename moved.
    """
