"""The exact plugin."""
