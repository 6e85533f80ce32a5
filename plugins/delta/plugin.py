"""Hook implementations of the delta plugin (being written)."""
