"""Changes to a batch's life cycle, one topic a module (each module's docstring says what it owns)."""
