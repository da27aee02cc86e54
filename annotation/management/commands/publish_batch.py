from annotation.crowd.panels import own_price
from annotation.crowd.providers.registry import platform_label
from annotation.crowd.services.background import start_publish
from annotation.crowd.services.publishing import publish_batch
from annotation.management.commands._common import command_errors, format_cost, get_batch
from core.management.cli import ProjectCommand


class Command(ProjectCommand):
    help = (
        "Publish a batch's HITs to its provider. Safe to re-run after an interruption: HITs already "
        "published are skipped and no HIT is ever created twice."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="batch name")
        parser.add_argument(
            "--queue", action="store_true", help="queue as a Celery task and return at once (needs CELERY_BROKER_URL)"
        )

    def handle(self, name, queue, **o):
        batch = get_batch(name)
        self.stdout.write(f"Cost: {format_cost(batch.cost)}")
        if not batch.hit_type_id:
            with command_errors():
                price = own_price(batch)  # a platform pricing the batch itself (Prolific: annotation.crowd.panels)
                if price is not None:
                    label = platform_label(batch.provider)
                    self.stdout.write(f"{label}'s own price (fees and VAT of your account): ${price:.2f}")
        with command_errors():
            if queue:
                job = start_publish(batch)
                self.stdout.write(f"Queued as job {job.pk}; follow it at /jobs/{job.pk}/")
                return
            published = publish_batch(batch, bar=o["verbosity"] > 0)
        total = batch.hits.count()
        out = batch.hits.exclude(provider_id=None).count()
        self.stdout.write(self.style.SUCCESS(f"Published {published} HIT(s) now; {out} of {total} are published."))
