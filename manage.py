#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    # A resident process with Django already loaded runs the command if it can (see
    # core.management.resident); otherwise, and with MANAGE_RESIDENT=off, this process does.
    from core.management.resident.client import run

    status = run(sys.argv, os.path.dirname(os.path.abspath(__file__)))
    if status is not None:
        sys.exit(status)

    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:  # a misconfigured environment is the operator's to fix: say what, without a traceback
        __import__(os.environ["DJANGO_SETTINGS_MODULE"])
    except ImproperlyConfigured as error:
        sys.exit(f"configuration error: {error}")

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
