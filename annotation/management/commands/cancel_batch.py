from annotation.crowd.services.batches import cancel_batch
from annotation.management.commands._common import command_errors, get_batch
from core.management.cli import ProjectCommand


class Command(ProjectCommand):
    help = (
        "Cancel a batch: withdraw its open HITs from the provider. Answers already submitted stay "
        "recorded and can still be synced and paid."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="batch name")

    def handle(self, name, **o):
        batch = get_batch(name)
        with command_errors():
            expired = cancel_batch(batch)
        self.stdout.write(self.style.SUCCESS(f"Batch {batch.name!r} cancelled; {expired} HIT(s) withdrawn."))
