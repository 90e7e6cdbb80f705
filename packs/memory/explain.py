"""(being written: see the issue this module belongs to)."""
