from datetime import timedelta

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from core.management.cli import ProjectCommand, command_errors, whole_number
from core.services.api_tokens import api_token, revoke_api_token


class Command(ProjectCommand):
    help = (
        "Make a researcher's API token and print its key, once: the site keeps only a hash, so it "
        "cannot be shown again. Scripts send it as 'Authorization: Token <key>' to /api/... "
        "An account that has a token gets a new one only with --renew (the old one stops working); "
        "--revoke deletes it. A token also stops working when it expires (--expires-days) or its "
        "account is no longer active staff."
    )

    def add_arguments(self, parser):
        parser.add_argument("username", help="a staff (researcher) account")
        action = parser.add_mutually_exclusive_group()
        action.add_argument("--renew", action="store_true", help="replace the account's token with a new one")
        action.add_argument("--revoke", action="store_true", help="delete the account's token; print nothing")
        parser.add_argument(
            "--expires-days",
            type=whole_number,
            metavar="N",
            help="the new token stops working after N days (default: never)",
        )

    def handle(self, username, renew, revoke, expires_days, **options):
        User = get_user_model()
        try:
            user = User.objects.get(**{User.USERNAME_FIELD: username})
        except User.DoesNotExist:
            raise CommandError(f"no account named {username!r}") from None
        if revoke:
            if expires_days is not None:
                raise CommandError("--expires-days is for a new token, not --revoke")
            if not revoke_api_token(user):
                self.stderr.write(f"{username!r} had no API token")
            return
        if expires_days is not None and expires_days < 1:
            raise CommandError("--expires-days must be at least 1")
        with command_errors():
            key = api_token(user, renew=renew, expires_in=timedelta(days=expires_days) if expires_days else None)
        self.stdout.write(key)
