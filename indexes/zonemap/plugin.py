"""Hook implementations of the zonemap plugin (being written)."""
