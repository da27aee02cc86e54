"""What changes a batch's audit sample: drawing it, expert labels given one at a time or imported, trusted labellers."""
