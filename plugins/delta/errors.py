"""Errors of the Delta plugin."""

from __future__ import annotations

from lakesieve.sdk import LakesieveError


class DeltaFeatureError(LakesieveError):
    """A Delta table uses a feature this plugin cannot honour; the message names the table and feature.

    Raised rather than return rows a deletion vector or a column mapping would hide or rename.
    """
