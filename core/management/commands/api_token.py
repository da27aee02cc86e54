from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from core.api_tokens import api_token
from core.cli import ProjectCommand, command_errors


class Command(ProjectCommand):
    help = (
        "Print a researcher's API token (created on first use). Send it as "
        "'Authorization: Token <key>' to /api/...; --renew replaces it, so the old one stops working."
    )

    def add_arguments(self, parser):
        parser.add_argument("username", help="a staff (researcher) account")
        parser.add_argument("--renew", action="store_true", help="replace the token with a new one")

    def handle(self, username, renew, **options):
        User = get_user_model()
        try:
            user = User.objects.get(**{User.USERNAME_FIELD: username})
        except User.DoesNotExist:
            raise CommandError(f"no account named {username!r}") from None
        with command_errors():
            self.stdout.write(api_token(user, renew=renew))
