from annotation.models import Batch
from core.management.cli import ProjectCommand, command_errors, get_named
from core.selectors import huggingface_settings
from publishing.hub_card import HUB_LICENSES
from publishing.services.dataset import check_repo_id, publish_dataset, push_folder, upload_command


class Command(ProjectCommand):
    help = (
        "Write a batch as a dataset folder ready for the Hugging Face Hub: Parquet configurations (queries, "
        "non_gendered, aggregated; judgments with --with-judgments), README.md with the Hub's YAML header and "
        "the study's facts, and croissant.json (Croissant 1.1 with Responsible-AI fields and each label's provenance). --push uploads it "
        "when HF_TOKEN is set; otherwise the command prints the upload command to run."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="batch name")
        parser.add_argument("--out", required=True, help="folder to write (its parent must exist)")
        parser.add_argument(
            "--license",
            required=True,
            choices=HUB_LICENSES,
            metavar="LICENSE",
            help="the dataset's license, a Hub identifier (no default: the researcher chooses): "
            + ", ".join(HUB_LICENSES),
        )
        parser.add_argument(
            "--license-name",
            metavar="NAME",
            help="with --license other: the license's name for the Hub's license_name (e.g. my-license-1.0)",
        )
        parser.add_argument(
            "--license-link",
            metavar="URL_OR_FILE",
            help="with --license other: the Hub's license_link, a URL of the terms or a file you add (e.g. LICENSE)",
        )
        parser.add_argument(
            "--with-judgments",
            action="store_true",
            help="also publish every judgment under dataset-local annotator pseudonyms (off by default)",
        )
        parser.add_argument(
            "--force",
            action="store_true",
            help="write into an --out holding files publish_dataset did not write (or edited ones): overwrite the "
            "files it writes, keep every other file",
        )
        parser.add_argument("--push", metavar="REPO_ID", help="upload to this Hub dataset (OWNER/NAME); needs HF_TOKEN")
        parser.add_argument("--private", action="store_true", help="with --push: create the repository private")
        parser.add_argument(
            "--paper",
            metavar="DOI_OR_URL",
            help="the paper the dataset supplements (its DOI or address): a related identifier in .zenodo.json",
        )

    def handle(
        self, name, out, license, with_judgments, push, private, force, license_name, license_link, paper=None, **o
    ):
        batch = get_named(Batch, name, "batch")
        with command_errors(ValueError):
            if push:
                check_repo_id(push)  # before writing anything
            publication = publish_dataset(
                batch,
                out,
                license,
                with_judgments=with_judgments,
                force=force,
                license_name=license_name,
                license_link=license_link,
                paper=paper,
            )
        # -v 0: nothing on stdout (errors still go to stderr and the exit status).
        say = self.stdout.write if o.get("verbosity", 1) > 0 else (lambda *args, **kwargs: None)
        rows = ", ".join(f"{config} {n}" for config, n in publication.rows.items())
        say(self.style.SUCCESS(f"Wrote the dataset folder {publication.path} (rows: {rows})."))
        say("Files: " + ", ".join(publication.files))
        if publication.kept:
            say("Left in place (not written by publish_dataset): " + ", ".join(publication.kept))
        say("Before publishing, fill in what the platform cannot know (README.md and croissant.json):")
        for field, why in publication.researcher_fields.items():
            say(f"  - {field}: {why}")
        say(
            "To deposit it on Zenodo: fill in the creators in .zenodo.json, then "
            f"manage.py zenodo_deposit {publication.path}"
        )
        if push:
            with command_errors(ValueError):
                hub = huggingface_settings()  # HF_TOKEN and HF_ENDPOINT, or the site's Connections page
                url = push_folder(publication.path, push, token=hub.token, private=private, endpoint=hub.endpoint)
            say(self.style.SUCCESS(f"Uploaded to the Hub: {url}"))
        else:
            say(
                "To upload it: "
                + upload_command(publication.path, "OWNER/NAME")
                + "  (or rerun with --push OWNER/NAME)"
            )
