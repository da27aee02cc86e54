"""Changes of machine labelling: pre-labels, calibration samples, routings; one topic a module."""
