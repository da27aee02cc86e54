"""Changes made for and by in-house annotators, one topic a module."""
