from django.core.management.base import CommandError

from annotation.machine.services.prelabels import cached_answers, clear_answer_cache
from annotation.management.commands._common import command_errors
from core.management.cli import ProjectCommand


class Command(ProjectCommand):
    help = (
        "List the chat pre-labeller's cached answers per model and prompt version, or forget a "
        "model's (--clear --model M): the cache is shared by every batch, so the next run with that "
        "model asks the endpoint, and pays, again. Stored pre-labels are kept."
    )

    def add_arguments(self, parser):
        parser.add_argument("--clear", action="store_true", help="forget the cached answers of --model")
        parser.add_argument("--model", default=None, help="the model whose answers to forget (with --clear)")
        parser.add_argument(
            "--prompt-version", default=None, help="only the answers to this prompt version (default: all)"
        )

    def handle(self, clear, model, prompt_version, **o):
        if not clear:
            if model or prompt_version:
                self.stderr.write("--model and --prompt-version only go with --clear; listing everything")
            rows = cached_answers()
            if not rows:
                self.stdout.write("No cached answers.")
            for row in rows:
                self.stdout.write(
                    f"{row['model']}\t{row['prompt_version']}\t{row['queries']} queries\t{row['requests']} requests"
                )
            return
        if not model:
            raise CommandError("--clear needs --model M: name the model whose cached answers to forget")
        with command_errors():
            deleted = clear_answer_cache(model, prompt_version)
        self.stdout.write(self.style.SUCCESS(f"Forgot the cached answers to {deleted} query text(s) of {model}."))
