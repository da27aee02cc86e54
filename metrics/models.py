"""Models of the metrics app."""
