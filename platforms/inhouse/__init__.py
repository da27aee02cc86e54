"""In-house annotators: their accounts and team, the one hand-out of HITs on this site
(also used by Prolific participants), and simulated annotators for the demo.

Reads: :mod:`.selectors` (the team, its members' progress). Writes: :mod:`.services`
(``handout``, ``team``, ``team_access``, ``simulation``). Shells: :mod:`.views`,
:mod:`.api` with :mod:`.serializers`. The login backend is :mod:`annotation.accounts`.
"""
