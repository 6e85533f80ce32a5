"""Contract test kits that format plugins and index types run (pytest)."""
