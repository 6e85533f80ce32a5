"""Tests: indexes."""
