"""A worked example of a lakesieve index type: ``valueset``."""
