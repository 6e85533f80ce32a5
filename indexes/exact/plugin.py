"""Hook implementations of the exact plugin (being written)."""
