from core.management.cli import ProjectCommand, command_errors
from core.sealing import new_key as make_key
from core.selectors import connection_states
from core.services.connections import reseal_connections


class Command(ProjectCommand):
    help = (
        "The site's connections to outside services (the language model, the Hugging Face Hub, a crowd platform's workspace): "
        "each field's source in force (environment, this site, default), never a secret. --new-key prints a "
        "fresh CONNECTIONS_KEY; --rotate seals every stored secret again with the first key of "
        "CONNECTIONS_KEY (set NEW,OLD first, then NEW alone). docs/deployment.md, Connections."
    )

    def add_arguments(self, parser):
        action = parser.add_mutually_exclusive_group()
        action.add_argument("--new-key", action="store_true", help="print a new Fernet key for CONNECTIONS_KEY")
        action.add_argument(
            "--rotate", action="store_true", help="seal every stored secret with the first key of CONNECTIONS_KEY"
        )

    def handle(self, new_key, rotate, **options):
        if new_key:
            self.stdout.write(make_key())
            return
        if rotate:
            with command_errors():
                count = reseal_connections()
            self.stdout.write(self.style.SUCCESS(f"Sealed the secrets of {count} connection(s) with the first key."))
            return

        for state in connection_states():
            self.stdout.write(f"{state.kind.title} ({state.kind.kind})")
            if state.problem:
                self.stdout.write(f"  ! {state.problem}")
            for f in state.fields:
                source = f"environment ({f.spec.setting})" if f.source == "environment" else f.source
                self.stdout.write(f"  {f.spec.name:<14} {f.shown or '-':<40} {source}")
