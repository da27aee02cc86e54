from core.management.cli import ProjectCommand, command_errors
from publishing.services.deposits import zenodo_deposit


class Command(ProjectCommand):
    help = (
        "Deposit a dataset folder (publish_dataset) or a paper bundle (paper) on Zenodo through its REST API, with "
        "the folder's .zenodo.json as metadata and the token of the Zenodo connection (ZENODO_TOKEN, or the "
        "Connections page). It creates the deposition (recorded in the folder's .zenodo-deposition.json, so a "
        "rerun resumes it and never makes a second one), uploads the files, sets the metadata and reports the "
        "reserved DOI; --publish publishes it and reports the record's DOI."
    )

    def add_arguments(self, parser):
        parser.add_argument("folder", help="a dataset folder of publish_dataset or a paper bundle of paper (--out)")
        parser.add_argument("--publish", action="store_true", help="publish the deposition (default: leave a draft)")

    def handle(self, folder, publish, **options):
        with command_errors():
            done = zenodo_deposit(folder, publish=publish)
        say = self.stdout.write if options.get("verbosity", 1) > 0 else (lambda *a, **k: None)
        how = "resumed" if done.resumed else "created"
        say(f"Deposition {done.id} ({how}): uploaded {len(done.uploaded)} file(s), {len(done.kept)} already there.")
        if done.published:
            say(self.style.SUCCESS(f"Published on Zenodo: DOI {done.doi} {done.url}".rstrip()))
        else:
            say(self.style.SUCCESS(f"Draft on Zenodo with the reserved DOI {done.doi or '(none given)'}."))
            say("Check it on Zenodo, then publish it there or rerun with --publish.")
