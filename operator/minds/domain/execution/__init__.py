"""The executor's rules: how steps move, computed from what was read; applied by the engine."""
