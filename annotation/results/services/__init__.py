"""Results of a batch: what its answers add up to, and its exports."""
