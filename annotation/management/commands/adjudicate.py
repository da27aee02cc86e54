from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from annotation.management.commands._common import command_errors, get_batch
from annotation.quality.services.adjudication import adjudicate
from genderbias.labels import CATEGORY_SLUGS, LABELS


class Command(BaseCommand):
    help = (
        "Settle a query's label as a researcher: the ruling (with reason, who and when) replaces the "
        "crowd's majority in exports, which mark it as adjudicated. Running it again updates the ruling."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="batch name")
        parser.add_argument("qid", help="query id within the batch")
        parser.add_argument("label", choices=[*LABELS, *CATEGORY_SLUGS], help="n/f/m/o or a category name")
        parser.add_argument("--reason", required=True, help="why this label (kept with the ruling)")
        parser.add_argument("--by", required=True, metavar="USERNAME", help="the researcher (a staff account)")

    def handle(self, name, qid, label, reason, by, **options):
        batch = get_batch(name)
        user = get_user_model().objects.filter(username=by, is_staff=True).first()
        if user is None:
            raise CommandError(f"--by: no researcher (staff account) named {by!r}")
        with command_errors():
            adjudication = adjudicate(batch, qid, label, reason, user)
        self.stdout.write(
            self.style.SUCCESS(f"Query {qid} of {batch.name} adjudicated as {adjudication.label} by {by}.")
        )
