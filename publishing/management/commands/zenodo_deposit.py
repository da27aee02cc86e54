from core.management.cli import ProjectCommand, command_errors
from publishing.services.deposits import zenodo_deposit


class Command(ProjectCommand):
    help = (
        "Deposit a dataset folder (publish_dataset) or a paper bundle (paper) on Zenodo through its REST API, with "
        "the folder's .zenodo.json as metadata and the token of the Zenodo connection (ZENODO_TOKEN, or the "
        "Connections page). It creates the deposition (recorded in the folder's .zenodo-deposition.json, so a "
        "rerun resumes it and never makes a second one), uploads the files, sets the metadata and reports the "
        "reserved DOI; --publish publishes it and reports the record's DOI. It lists the files first and asks "
        "before sending anything (--yes for scripts); only regular files with a single link are sent."
    )

    def add_arguments(self, parser):
        parser.add_argument("folder", help="a dataset folder of publish_dataset or a paper bundle of paper (--out)")
        parser.add_argument("--publish", action="store_true", help="publish the deposition (default: leave a draft)")
        parser.add_argument("--yes", action="store_true", help="send the listed files without asking (for scripts)")

    def handle(self, folder, publish, yes=False, **options):
        def confirm(names: list[str]) -> bool:
            self.stdout.write(f"Files to deposit from {folder} ({len(names)}):")
            for name in names:
                self.stdout.write(f"  {name}")
            if yes:
                return True
            try:
                answer = input(f"Send these {len(names)} file(s) to Zenodo? [y/N] ")
            except EOFError:
                answer = ""
            return answer.strip().lower() in ("y", "yes")

        with command_errors():
            done = zenodo_deposit(folder, publish=publish, confirm=confirm)
        say = self.stdout.write if options.get("verbosity", 1) > 0 else (lambda *a, **k: None)
        how = "resumed" if done.resumed else "created"
        say(f"Deposition {done.id} ({how}): uploaded {len(done.uploaded)} file(s), {len(done.kept)} already there.")
        if done.published:
            say(self.style.SUCCESS(f"Published on Zenodo: DOI {done.doi} {done.url}".rstrip()))
        else:
            say(self.style.SUCCESS(f"Draft on Zenodo with the reserved DOI {done.doi or '(none given)'}."))
            say("Check it on Zenodo, then publish it there or rerun with --publish.")
