import getpass

from django.core.management.base import BaseCommand, CommandError

from annotation import services


class Command(BaseCommand):
    help = (
        "Create an in-house annotator account (there is no sign-up): a user in the 'annotators' group "
        "with a worker pseudonym. Asks for a password unless --password or --no-password is given."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--email", default="")
        parser.add_argument("--password", help="set this password (visible in shell history; prefer the prompt)")
        parser.add_argument("--no-password", action="store_true", help="unusable password (set it later in the admin)")

    def handle(self, username, email, password, no_password, **o):
        if not password and not no_password:
            password = getpass.getpass(f"Password for {username}: ")
            if not password or password != getpass.getpass("Again: "):
                raise CommandError("passwords are empty or differ")
        user = services.create_annotator(username, password=password or None, email=email)
        self.stdout.write(self.style.SUCCESS(f"Annotator {user.username!r} can log in and go to /annotation/next/."))
