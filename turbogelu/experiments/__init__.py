"""Experiments' library code: importable functions that the CLI and the notebooks call."""
