"""Hook implementations of the bloom plugin (being written)."""
