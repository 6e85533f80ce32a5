"""The delta plugin."""
