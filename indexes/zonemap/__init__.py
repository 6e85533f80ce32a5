"""The zonemap plugin."""
