from annotation.management.commands._common import command_errors, get_batch
from core.management.cli import ProjectCommand
from platforms.prolific.rehearsal import services as rehearsals


class Command(ProjectCommand):
    help = (
        "Rehearse a Prolific batch with Prolific's test participants before paying: its draft study is made "
        "(once, as publishing makes it), a test participant is created for the researcher account when --email "
        "is given and none is known, and a test study made from the draft is published to the workspace's test "
        "participants (once: a lost answer is looked up, --again makes a new one). A test participant goes "
        "through the real arrival check and HIT page; nothing they answer is recorded. --finish approves the "
        "test submissions (Prolific refunds the wallet) and stops the test study. The batch stays a draft."
    )

    def add_arguments(self, parser):
        parser.add_argument("batch", help="the Prolific batch's name (a draft)")
        parser.add_argument("--email", default="", help="create the researcher's test participant with this email")
        parser.add_argument("--again", action="store_true", help="make a new test study even if one was made")
        parser.add_argument("--finish", action="store_true", help="approve the test submissions, stop the test study")

    def handle(self, **o):
        batch = get_batch(o["batch"])
        with command_errors():
            if o["finish"]:
                done = rehearsals.finish_rehearsal(batch)
                self.stdout.write(
                    f"Rehearsal of {batch.name} finished: {done.approved} test submission(s) approved, "
                    f"test study {done.study_id} {'stopped' if done.stopped else 'already stopped'}"
                )
                return
            done = rehearsals.rehearse(batch, email=o["email"], again=o["again"])
        participant = done.test_participant_id or "the workspace's (none made here)"
        self.stdout.write(
            f"Test study {done.study_id} ({done.outcome}) made from draft study {done.draft_study_id}; "
            f"test participant: {participant}"
        )
        if done.study_url:
            self.stdout.write(f"Open it as the test participant: {done.study_url}")
        self.stdout.write(f"When done: manage.py prolific_rehearse {batch.name} --finish")
