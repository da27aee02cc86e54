"""A hostile round (issue 53): two labs set up as docs/deployment.md says, then every URL pattern of the site
asked with every method, hostile bodies and query strings, as every kind of account of the second lab and of no
group, the path's parameters naming the first lab's objects; first, each finding of the fifth and sixth rounds
(issues 68 and 82) is tried again. What is judged High, Medium and Low: docs/benchmarks.md, "Hostile round".
``-v 2`` prints every attempt of the rounds' findings, refused or not. Run it on a database of its own (it
writes two labs into it), as docs/benchmarks.md shows.

It prints the counts after the findings and after each round (flushed: a round stopped early on a loaded
machine has said what it found), then each finding (at most 50 of each kind), and exits 1 when any High or
Medium was found. Not a test of the suite: it takes minutes, on a loaded machine hours.
"""

from __future__ import annotations

import logging
import time

from django.contrib.auth import get_user_model

from benchmarks.hostile_findings_68 import findings_of_issue_68
from benchmarks.hostile_findings_82 import findings_of_issue_82
from benchmarks.hostile_labs import lab_a_state, make_labs, url_paths, user
from benchmarks.hostile_sweep import ask
from core.management.cli import ProjectCommand


class Command(ProjectCommand):
    help = "Two labs set up as the docs say, then every URL x method x hostile body x account of the other lab."

    def add_arguments(self, parser):
        parser.add_argument("--rounds", type=int, default=1, help="passes over every URL (each with other bodies)")
        parser.add_argument("--limit", type=int, default=None, help="the first N URL patterns only (a quick look)")
        parser.add_argument(
            "--control",
            action="store_true",
            help="ask as the first lab's own owner too: its answers show its secrets, so the judge must count "
            "them as High (a check that the judge sees a leak; the round then exits 1)",
        )

    def handle(self, rounds: int, limit: int | None, control: bool, **options):
        for name in ("django.request", "django.security"):  # every refusal is logged: the counts say enough
            logging.getLogger(name).setLevel(logging.CRITICAL)
        started = time.monotonic()
        world = make_labs()
        identities = {
            "lab-b owner": world["b-owner"],
            "lab-b researcher": world["b-researcher"],
            "lab-b viewer": world["b-viewer"],
            "lab-b annotator": world["b-annotator"],
            "staff of no group": get_user_model().objects.create_user(
                "hr-nogroup", password="pw-secret-123", is_staff=True
            ),
            "annotator of no group": world["loner"],
            "anonymous": None,
        }
        if control:
            identities["lab-a owner (control)"] = user("hr-alice")
        before = lab_a_state(world)
        counts = {"attempts": 0, "High": 0, "Medium": 0, "Low": 0}
        findings: dict[str, list[str]] = {"High": [], "Medium": [], "Low": []}
        # The fifth round's findings make lab B's pool, which the sixth's viewer asks for.
        fifth = findings_of_issue_68(world)
        sixth = findings_of_issue_82(world, url_paths(world, lab="b"))
        for kind, line in [*fifth, *sixth]:
            counts["attempts"] += 1
            if options["verbosity"] > 1:
                self.stdout.write(f"  [{kind or 'refused'}] {line}")
            if kind:
                counts[kind] += 1
                findings[kind].append(line)
        if lab_a_state(world) != before:
            counts["High"] += 1
            findings["High"].append(f"the rounds' findings changed lab A's state: {lab_a_state(world)} vs {before}")
            before = lab_a_state(world)
        self._progress("the rounds' findings", counts, started)
        templates = url_paths(world)[:limit]
        for round_number in range(rounds):
            for name, path in templates:
                for who, account in identities.items():
                    ask(findings, counts, who, account, name, path, round_number)
                if lab_a_state(world) != before:  # a change of lab A's state: name the URL that made it
                    counts["High"] += 1
                    findings["High"].append(f"{name} {path}: lab A's state changed: {lab_a_state(world)} vs {before}")
                    before = lab_a_state(world)
            self._progress(f"round {round_number + 1} of {rounds}", counts, started)
        self.stdout.write(
            f"attempts {counts['attempts']}, URL patterns {len(templates)}, accounts {len(identities)}, "
            f"rounds {rounds}, {time.monotonic() - started:.0f} s"
        )
        for kind in ("High", "Medium", "Low"):
            self.stdout.write(f"{kind}: {counts[kind]}")
            for line in findings[kind][:50]:
                self.stdout.write(f"  {line}")
        if counts["High"] or counts["Medium"]:
            raise SystemExit(1)

    def _progress(self, what: str, counts: dict, started: float) -> None:
        self.stdout.write(
            f"after {what}: attempts {counts['attempts']}, High {counts['High']}, Medium {counts['Medium']}, "
            f"Low {counts['Low']}, {time.monotonic() - started:.0f} s"
        )
        self.stdout.flush()
