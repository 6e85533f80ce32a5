"""Tests: object storage."""
