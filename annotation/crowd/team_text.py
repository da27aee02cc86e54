"""Who a team batch lacks, in one sentence: the places no member can take, on which HITs, why, and how
many annotators to add. Formatting only, so that the batch page and routing's wait say the same words."""

from __future__ import annotations

from collections.abc import Sequence

_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")


def ordinal(n: int) -> str:
    """1 -> "first", ..., 10 -> "tenth", then "11th", "12th", "23rd" ..."""
    if 1 <= n <= len(_ORDINALS):
        return _ORDINALS[n - 1]
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def team_needs(places: int, positions: Sequence[int], team: int, needed: int, escalated: int) -> str:
    """``places`` places on the HITs at ``positions`` that none of the ``team`` active members can take,
    ``escalated`` of them added by escalation; ``needed``: the most places stuck on one HIT."""
    shown = ", ".join(str(p) for p in sorted(positions)[:10]) + (", ..." if len(positions) > 10 else "")
    who = f"a {ordinal(team + 1)} team member" if needed == 1 else f"{needed} more team members"
    hits = "HIT" if len(positions) == 1 else "HITs"
    why = []
    if escalated:
        why.append(f"{escalated} added by escalation, which asks an answer from someone who has not answered the HIT")
    if places - escalated:
        why.append(
            f"{places - escalated} freed by a returned HIT or by work that failed its gold check, whose answers are "
            "kept (so its member may not take it again)"
        )
    members = f"each of the team's {team} active member{'s' if team != 1 else ''} has"
    return (
        f"{places} place{'s' if places != 1 else ''} on {hits} {shown} need{'s' if places == 1 else ''} {who} "
        f"({'; '.join(why)}; {members}): add {needed} annotator{'s' if needed != 1 else ''} to the team"
    )
