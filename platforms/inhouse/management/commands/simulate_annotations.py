from annotation.crowd.services.sync import sync_batch
from annotation.management.commands._common import command_errors, get_batch
from core.management.cli import ProjectCommand, decimal_number, whole_number
from platforms.inhouse.services.simulation import simulate_local_annotations


class Command(ProjectCommand):
    help = (
        "Let simulated in-house annotators answer every HIT of a published local batch, through the same "
        "services as the site, then review the answers (sync_batch). Seeded: the same run gives the same labels."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="batch name (provider local, published)")
        parser.add_argument("--annotators", type=whole_number, default=5, help="simulated annotators (default 5)")
        parser.add_argument(
            "--accuracy", type=decimal_number, default=0.9, help="chance of the word-list answer (default 0.9)"
        )
        parser.add_argument("--seed", type=whole_number, default=0, help="random seed (default 0)")

    def handle(self, name, annotators, accuracy, seed, **o):
        batch = get_batch(name)
        with command_errors():
            result = simulate_local_annotations(batch, annotators=annotators, accuracy=accuracy, seed=seed)
            review = sync_batch(batch)
        self.stdout.write(
            self.style.SUCCESS(
                f"{result.annotators} simulated annotators submitted {result.assignments} assignments "
                f"({result.judgments} judgments); approved {review.approved}, rejected {review.rejected}"
            )
        )
