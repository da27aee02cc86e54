from core.management.cli import ProjectCommand, command_errors


class Command(ProjectCommand):
    help = (
        "Research groups: list them with their members, make one (--create NAME, with --owner USER), "
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
        parser.add_argument("--owner", metavar="USER", help="with --create: the group's first owner")

    def handle(self, create, member, remove, owner, **options):
        from django.contrib.auth import get_user_model

        from core.errors import ServiceError
        from core.models import ResearchGroup, scope_of
        from core.selectors import members
        from core.services import groups

        with command_errors():
            scope = scope_of()  # --group: the one group (ProjectCommand); None: every group
            chosen = ResearchGroup.objects.filter(pk__in=scope).first() if scope else None
            if create:
                user = get_user_model().objects.filter(username=owner).first() if owner else None
                if owner and user is None:
                    raise ServiceError(f"--owner: no account {owner!r}")
                group = groups.create_group(create, owner=user)
                self.stdout.write(self.style.SUCCESS(f"Made research group {group.name} ({group.slug})"))
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
