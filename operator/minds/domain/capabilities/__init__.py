"""The typed capability vocabulary and pure policy decisions over it."""
