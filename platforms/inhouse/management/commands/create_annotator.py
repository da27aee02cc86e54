import getpass

from django.core.management.base import CommandError

from annotation.management.commands._common import command_errors
from core.management.cli import ProjectCommand
from platforms.inhouse.services.annotators import create_annotator, validate_username


class Command(ProjectCommand):
    help = (
        "Create an in-house annotator account (there is no sign-up): a user in the 'annotators' group "
        "with a worker pseudonym. Asks for a password unless --password or --no-password is given. "
        "An existing account is refused unless --reset-password; staff accounts always."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--email", default="")
        parser.add_argument("--password", help="set this password (visible in shell history; prefer the prompt)")
        parser.add_argument("--no-password", action="store_true", help="unusable password (set it later in the admin)")
        parser.add_argument(
            "--reset-password", action="store_true", help="the annotator exists: give them this new password"
        )

    def handle(self, username, email, password, no_password, reset_password, **o):
        with command_errors():
            validate_username(username)  # before asking for a password
        if not password and not no_password:
            try:
                password = getpass.getpass(f"Password for {username}: ")
                again = getpass.getpass("Again: ")
            except EOFError:
                raise CommandError("no terminal to ask for a password: give --password or --no-password") from None
            if not password or password != again:
                raise CommandError("passwords are empty or differ")
        with command_errors():
            user = create_annotator(username, password=password or None, email=email, reset_password=reset_password)
        done = "has a new password" if reset_password else "can log in and go to /annotation/next/"
        self.stdout.write(self.style.SUCCESS(f"Annotator {user.username!r} {done}."))
