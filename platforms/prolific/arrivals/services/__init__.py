"""An arrival's confirmation: :mod:`.checks` asks Prolific about a link off the request (threads, pacing,
the shared cache); :mod:`.links` checks a link against its batch and keeps its session, signed URLs included.
"""
