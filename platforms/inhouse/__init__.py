"""In-house annotators: their accounts and team, the one hand-out of HITs on this site (also used by
Prolific participants), and simulated annotators for the demo.
"""
