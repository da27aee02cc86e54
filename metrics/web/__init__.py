"""Shell support of the metrics app: what its pages and API share."""
