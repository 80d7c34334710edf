"""The exercises: their checks and probes, hint levels, the student edition, and what the build derived (the lock)."""
