"""Tests: query."""
