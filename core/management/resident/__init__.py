"""A resident process that commands hand their work to, so start-up is paid once.

Starting Python, Django, the apps and the heavy libraries costs every ``manage.py`` command
about 0.6–1 s of CPU: more than the work of many commands, and a user registering a study as
they would type it (``migrate``, ``import_collection``, ``import_queries``, ``import_run``
once per run file, ``pool``) pays it eleven times. As in Rails' Spring, the first command
starts a resident process in the background that has loaded all of that once; every later
command connects to it over a Unix socket and hands over its arguments, working directory,
environment and its standard input, output and error (the file descriptors themselves). The
resident forks a copy of itself that runs the command exactly as the command's own process
would have, writing to the same terminal or pipes, and answers its exit status. Each command
is a fresh fork: no command sees another's state, database connections or caches.

Who shares a resident, and when it is not used (:mod:`.client`, :mod:`.server`):

- the same user (the socket sits in a folder only its owner can enter, and the resident
  checks the caller's credentials), the same interpreter and flags, the same checkout and the
  same environment apart from a terminal's own variables (``PWD``, ``COLUMNS``…): a command
  with another ``DATABASE_URL`` gets a resident of its own;
- a resident exits as soon as any file it imported (or a folder holding one) changed, so an
  edit, a ``git pull`` or a ``pip install`` is seen by the next command; and after
  :data:`~.server.IDLE_SECONDS` without a command;
- interactive commands (``shell``, ``runserver``, ``createsuperuser``…) run in their own
  process, as does everything when ``MANAGE_RESIDENT=off``; anything unexpected (no usable
  folder, a resident that cannot start) falls back to the command's own process, silently.

``client`` is standard library only: it runs before Django is imported.
"""
