"""The bloom plugin."""
