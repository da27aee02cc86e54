from core.errors import ServiceError
from core.management.cli import ProjectCommand, command_errors
from core.models import ResearchGroup, scope_of
from core.selectors import members
from core.services import groups


class Command(ProjectCommand):
    help = (
        "Research groups: list them with their members, make one with its first owner (--create NAME --owner USER; "
        "USER's staff account is made, its password printed once, when there is none), "
        "or give USER a ROLE in the group named by --group (--member USER ROLE; --remove USER). "
        "Run by whoever runs the server, so no role is asked for."
    )

    def add_arguments(self, parser):
        action = parser.add_mutually_exclusive_group()
        action.add_argument("--create", metavar="NAME", help="make a research group")
        action.add_argument(
            "--member", nargs=2, metavar=("USER", "ROLE"), help="owner, researcher, viewer or annotator"
        )
        action.add_argument("--remove", metavar="USER", help="USER leaves the group")
        parser.add_argument(
            "--owner", metavar="USER", help="with --create: the group's first owner (made, with a password, if new)"
        )

    def handle(self, create, member, remove, owner, **options):
        with command_errors():
            scope = scope_of()  # --group: the one group (ProjectCommand); None: every group
            chosen = ResearchGroup.objects.filter(pk__in=scope).first() if scope else None
            if create:
                if not owner:
                    raise ServiceError("--owner: say who owns the new group (an account made now if there is none)")
                group, password = groups.create_group_with_owner(create, owner)
                self.stdout.write(self.style.SUCCESS(f"Made research group {group.name} ({group.slug})"))
                if password:
                    self.stdout.write(
                        f"Made the account {owner} (staff, no superuser), its owner; password: {password}"
                    )
                    self.stdout.write("  shown once: they log in with it and change it at /accounts/password_change/")
                else:
                    self.stdout.write(f"{owner} owns it")
                lost = list(groups.staff_of_no_group().values_list("username", flat=True))
                if lost and ResearchGroup.objects.count() > 1:
                    self.stdout.write(
                        "Staff accounts of no group (they see nothing; give each a role with "
                        f"--group SLUG --member USER ROLE): {', '.join(lost)}"
                    )
                return
            if member or remove:
                if chosen is None:
                    raise ServiceError("--group: say which research group (its slug)")
                if member:
                    groups.set_member(None, chosen, member[0], member[1])
                else:
                    groups.remove_member(None, chosen, remove)
            for group in [chosen] if chosen else ResearchGroup.objects.all():
                self.stdout.write(f"{group.slug}\t{group.name}")
                for membership in members(group):
                    self.stdout.write(f"  {membership.user.username}\t{membership.role}")
