"""Changes of the quality loop, one topic a module."""
