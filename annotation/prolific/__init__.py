"""Prolific participants: arrivals confirmed with Prolific, the study's submissions reconciled,
bonuses paid once. The provider and its client live with the others in
:mod:`annotation.crowd.providers`.

State: :mod:`.services`. Shells: :mod:`.views`.
"""
