#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    from core.startup import frozen_after, keep_freed_memory

    keep_freed_memory()
    django.setup = frozen_after(django.setup)  # what the apps load is kept out of the collector's passes

    try:
        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as error:
        from django.conf import settings

        if settings.configured:  # raised by a command's own work: its traceback helps
            raise
        sys.exit(f"configuration error: {error}")  # the settings could not load: the operator's to fix


if __name__ == "__main__":
    main()
