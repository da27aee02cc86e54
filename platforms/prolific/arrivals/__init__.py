"""Participants arriving from Prolific: whether a study link is Prolific's word for this study, participant
and browser (:mod:`.services`)."""
