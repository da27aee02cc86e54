"""The resident process: Django and the heavy libraries loaded once, a fork per command.

Started by :mod:`.client` as ``python -m core.management.resident.server SOCKET`` with the
command's environment. It loads what commands share (settings, apps, the URLconf the system
checks walk, the migrations, the database driver, numpy, polars and pyarrow), freezes it
out of the garbage collector's sight (so forks share its pages), and then serves: for each
caller of the same user it forks a child that takes over the caller's standard streams, working
directory, environment and arguments and runs ``execute_from_command_line``; the child itself
answers its exit status. The resident opens no database connection and starts no thread, so
every child starts as clean as a new process.

It exits when a file it imported, or a folder holding one, changed since it started (the
caller is told so and starts a fresh one), after :data:`IDLE_SECONDS` with no command, or
when asked to stop.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import io
import json
import logging
import os
import resource
import select
import signal
import socket
import struct
import sys
import threading
import time
import traceback
from pathlib import Path

from core.management.resident.client import _HEADER, key

IDLE_SECONDS = 600
#: Commands that talk to a person at a terminal or serve until stopped: their own process.
INTERACTIVE = frozenset(
    {"shell", "dbshell", "runserver", "testserver", "test", "createsuperuser", "changepassword", "makemessages"}
)
#: Heavy libraries most data commands use; loaded once here instead of once per command.
#: (The apps' own modules are loaded by Django's setup and the URLconf; core names no app.)
PRELOAD = ("numpy", "numpy.random", "polars", "pyarrow.parquet", "pyarrow.compute")


#: How long a resident being started waits for another one of the same environment that
#: is leaving (it releases its lock before it says so): past it, that one is serving.
LOCK_SECONDS = 10.0
#: A request is arguments and an environment: far below this.
_LARGEST_REQUEST = 16 << 20


def main(path: Path) -> None:
    lock = _lock(path.with_suffix(".lock"))
    if lock is None:
        return  # another resident for this environment is serving
    own_key = path.stem
    if key(dict(os.environ), os.getcwd()) != own_key:
        return
    checks_clean = _load()
    stamps = _stamps()
    path.unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    os.chmod(path, 0o600)
    listener.listen(64)
    path.with_suffix(".pid").write_text(str(os.getpid()))
    Resident(listener, path, own_key, stamps, checks_clean, lock).serve()


def _lock(path: Path):
    """The lock that keeps one resident per environment, held for the process's life."""
    deadline = time.monotonic() + LOCK_SECONDS
    lock = open(path, "a")  # noqa: SIM115
    while True:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return lock
        except BlockingIOError:
            if time.monotonic() > deadline:
                lock.close()
                return None
            time.sleep(0.05)


def _load() -> bool:
    """Load what commands need; whether the system checks found nothing. The commands' own
    modules are left to the forks: once the URLconf has loaded the apps, one costs a
    millisecond or two, where loading all of them here cost 0.7 s (the API schema's, the test
    runner's, Celery's)."""
    import django

    gc.disable()  # nothing loaded here is garbage: no collections until it is frozen below
    django.setup()
    from django.conf import settings
    from django.core.management import get_commands
    from django.urls import get_resolver

    for module in PRELOAD:
        with contextlib.suppress(ImportError):
            __import__(module)
    get_commands()  # the scan of every app's commands, cached
    try:
        get_resolver().url_patterns  # noqa: B018 (imports every view, as the system checks would)
        __import__(f"{settings.DATABASES['default']['ENGINE']}.base")
        from django.db.migrations.loader import MigrationLoader

        MigrationLoader(None, ignore_no_migrations=True)  # every migration's module, for ``migrate``
    except Exception:
        pass
    from django.core import checks
    from django.db import connections

    clean = not checks.run_checks()
    connections.close_all()  # a fork must never share a connection: none is opened, none is kept
    gc.freeze()  # out of the collector's sight, so forks share these pages instead of copying them
    gc.enable()
    return clean


def _trust_clean_checks() -> None:
    """The system checks found nothing when the resident loaded this code with these settings
    (a changed file retires it), so a command's own run of them, without a database, would find
    nothing either: skip it, as ``--skip-checks`` would (about 65 ms of every command). ``manage.py
    check`` and the checks a command runs against a database (``migrate``'s) still run. Commands
    call ``django.core.checks.run_checks``, the registry's method bound at import: that name is
    the one replaced."""
    from django.core import checks

    everything = checks.run_checks

    def run_checks(app_configs=None, tags=None, include_deployment_checks=False, databases=None):
        if app_configs is None and not include_deployment_checks and not databases:
            return []
        return everything(app_configs, tags, include_deployment_checks, databases)

    checks.run_checks = run_checks


def _stamps() -> dict[str, tuple[int, int]]:
    """Every imported file and the folders holding them (a new module there could shadow one),
    with sys.path's folders (an installed package) and the apps' commands' folders: their
    modification time and size (a folder that does not exist is left out)."""
    from django.apps import apps

    files = {getattr(module, "__file__", None) for module in list(sys.modules.values())}
    files.discard(None)
    folders = {os.path.dirname(f) for f in files} | {p for p in sys.path if p}
    # the commands' folders too: the resident lists them once (a command added is a new name)
    folders |= {os.path.join(app.path, "management", "commands") for app in apps.get_app_configs()}
    stamps = {}
    for name in files | folders:
        try:
            info = os.stat(name)
        except OSError:
            continue
        stamps[name] = (info.st_mtime_ns, info.st_size)
    return stamps


def _changed(stamps: dict[str, tuple[int, int]]) -> bool:
    for name, stamp in stamps.items():
        try:
            info = os.stat(name)
        except OSError:
            return True
        if (info.st_mtime_ns, info.st_size) != stamp:
            return True
    return False


class Resident:
    """The serving loop. Each command's connection stays open here until its fork has ended, and
    the resident answers the fork's end as the kernel reports it (``waitpid``): an exit status, or
    the signal that ended it, so a caller ends exactly as the command's own process would have,
    even when the fork was killed."""

    def __init__(
        self, listener: socket.socket, path: Path, own_key: str, stamps: dict, checks_clean: bool, lock
    ) -> None:
        self.listener, self.path, self.key, self.stamps = listener, path, own_key, stamps
        self.checks_clean, self.lock = checks_clean, lock
        self.children: dict[int, socket.socket] = {}  # a running fork -> its caller's connection
        self.commands = 0
        self.idle_since = time.monotonic()

    def serve(self) -> None:
        signal.signal(signal.SIGTERM, lambda *_: self._leave())
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        woken, wake = os.pipe()  # a fork's end wakes the loop at once (SIGCHLD), not at its next second
        for fd in (woken, wake):
            os.set_blocking(fd, False)
        signal.set_wakeup_fd(wake)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        while True:
            ready, _, _ = select.select([self.listener, woken], [], [], 1.0)
            if woken in ready:
                with contextlib.suppress(BlockingIOError):
                    os.read(woken, 512)
            self._reap()
            if self.listener in ready:
                try:
                    connection, _ = self.listener.accept()
                except OSError:
                    continue
                keep = False
                try:
                    keep = self._answer(connection)
                except (OSError, ValueError, TypeError, AttributeError):
                    traceback.print_exc()  # to the resident's log: a caller that went away or sent
                    # nonsense costs it its answer, nothing more
                finally:
                    if not keep:
                        connection.close()
                self.idle_since = time.monotonic()
            elif not self.children and time.monotonic() - self.idle_since > IDLE_SECONDS:
                self._leave()

    def _answer(self, connection: socket.socket) -> bool:
        """Answer one caller; whether its connection stays open (a command running)."""
        _pid, uid, _ = struct.unpack("3i", connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
        if uid != os.getuid():
            return False
        connection.settimeout(10)
        message, fds = _receive(connection)
        try:
            if not isinstance(message, dict):
                return False
            if message.get("op") == "run":
                return self._run(connection, message, fds)
            if message.get("op") == "usage":
                self._settle(timeout=30.0 if message.get("settle") else 0.0)
                _reply(connection, usage=_usage(), commands=self.commands, running=len(self.children))
            elif message.get("op") == "stop":
                _reply(connection, stopping=os.getpid())
                self._leave()
            return False
        finally:
            for fd in fds:
                os.close(fd)

    def _run(self, connection: socket.socket, message: dict, fds: list[int]) -> bool:
        argv = [str(a) for a in message.get("argv", [])]
        env = {str(k): str(v) for k, v in message.get("env", {}).items()}
        command = argv[1] if len(argv) > 1 else "help"
        if len(fds) != 3 or key(env, os.getcwd()) != self.key:
            _reply(connection, refused="environment")
            return False
        if command in INTERACTIVE:
            _reply(connection, refused="interactive")
            return False
        if _changed(self.stamps):
            self._close()  # the next caller starts a fresh resident
            _reply(connection, refused="stale")
            self._leave()
        child = os.fork()
        if child == 0:
            log = os.dup(2)  # the resident's log, before the caller's streams replace it
            try:
                self._become_a_command()
                if self.checks_clean and command != "check":
                    _trust_clean_checks()
                _inherit(message.get("process") or {})
                _child(connection, fds, argv, str(message.get("cwd") or "/"), env)
            except BaseException:  # it failed before running the command: the caller runs it itself
                with contextlib.suppress(OSError):
                    os.write(log, traceback.format_exc().encode())
            finally:
                os._exit(1)
        self.children[child] = connection
        self.commands += 1
        return True

    def _become_a_command(self) -> None:
        """In a fresh fork: nothing of the resident's serving stays (its socket, the lock that
        keeps one resident per environment, the other commands' connections, its signals)."""
        signal.set_wakeup_fd(-1)
        for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
            signal.signal(signum, signal.SIG_DFL)
        self.listener.close()
        self.lock.close()
        for other in self.children.values():
            other.close()

    def _reap(self) -> None:
        """Collect ended forks and tell each one's caller how it ended."""
        for child in list(self.children):
            try:
                done, status = os.waitpid(child, os.WNOHANG)
            except ChildProcessError:
                done, status = child, 1 << 8
            if not done:
                continue
            connection = self.children.pop(child)
            with contextlib.suppress(OSError), connection:
                if os.WIFSIGNALED(status):
                    _reply(connection, signal=os.WTERMSIG(status))
                else:
                    _reply(connection, exit=os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)

    def _settle(self, timeout: float) -> None:
        """Reap the commands that have ended; with a ``timeout``, wait for the running ones up to
        it (a benchmark asking after its command returned, whose fork is still exiting)."""
        deadline = time.monotonic() + timeout
        self._reap()
        while self.children and time.monotonic() < deadline:
            time.sleep(0.002)
            self._reap()

    def _close(self) -> None:
        """Stop listening and give the place up (socket, pid, the lock, an empty log) before
        anyone is told: a resident started next for this environment finds it free. The lock
        file itself stays: unlinked, a resident starting could lock a name another had made anew."""
        self.path.unlink(missing_ok=True)
        self.path.with_suffix(".pid").unlink(missing_ok=True)
        self.listener.close()
        log = self.path.with_suffix(".log")
        with contextlib.suppress(OSError):
            if log.stat().st_size == 0:
                log.unlink()
        self.lock.close()

    def _leave(self) -> None:
        """Exit; running commands go on (their callers then learn of their end from them alone)."""
        if self.listener.fileno() != -1:
            self._close()
        sys.exit(0)


def _receive(connection: socket.socket) -> tuple[dict, list[int]]:
    data, fds, _, _ = socket.recv_fds(connection, 1 << 16, 3)
    if len(data) < _HEADER.size:
        raise ValueError("short request")
    (length,) = _HEADER.unpack_from(data)
    if length > _LARGEST_REQUEST:
        raise ValueError("request too large")
    body = bytearray(data[_HEADER.size :])
    while len(body) < length:
        more = connection.recv(length - len(body))
        if not more:
            raise ValueError("truncated request")
        body += more
    return json.loads(body), list(fds)


def _reply(connection: socket.socket, **fields) -> None:
    connection.sendall(json.dumps(fields).encode() + b"\n")


def _usage() -> dict:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "pid": os.getpid(),
        "cpu": own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime,
        "commands_cpu": children.ru_utime + children.ru_stime,  # the forks' own (ended ones)
        "maxrss_kb": max(own.ru_maxrss, children.ru_maxrss),
    }


def _inherit(process: dict) -> None:
    """Take on what the caller's own process would have inherited: its umask (files the
    command writes get the caller's permissions), niceness (``nice manage.py …``) and the
    resource limits its shell set (``ulimit -v``); a limit the fork may not raise stays lower."""
    if "umask" in process:
        os.umask(int(process["umask"]) & 0o777)
    with contextlib.suppress(OSError, ValueError, TypeError):
        niceness = int(process["nice"])
        if niceness > os.getpriority(os.PRIO_PROCESS, 0):
            os.setpriority(os.PRIO_PROCESS, 0, niceness)
    for name, (soft, hard) in (process.get("limits") or {}).items():
        which = getattr(resource, str(name), None)
        if which is None or not str(name).startswith("RLIMIT_"):
            continue
        with contextlib.suppress(OSError, ValueError, TypeError):
            resource.setrlimit(which, (int(soft), int(hard)))


def _child(connection: socket.socket, fds: list[int], argv: list[str], cwd: str, env: dict[str, str]) -> None:
    """Become the command's process: its streams, folder, environment and arguments; run it;
    end as its own process would (the resident tells the caller how). Never returns."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for target, fd in zip((0, 1, 2), fds, strict=True):
        os.dup2(fd, target)
    os.chdir(cwd)
    timezone = os.environ.get("TZ")  # Django set it from TIME_ZONE, as in every process of the site
    os.environ.clear()
    os.environ.update(env)
    if timezone is not None:
        os.environ["TZ"] = timezone
    sys.argv = argv
    _take_streams()
    _reseed()
    connection.settimeout(None)
    _reply(connection, pid=os.getpid())  # from here on the command is under way: never run twice
    threading.Thread(target=_end_with_caller, args=(connection,), daemon=True).start()
    code = 0
    try:
        from django.core.management import execute_from_command_line

        execute_from_command_line(argv)
    except SystemExit as exit_:
        code = _exit_status(exit_.code)
    except KeyboardInterrupt:  # Python's own end for it: the traceback, then death by SIGINT
        traceback.print_exc()
        _finish()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    except BaseException:
        traceback.print_exc()
        code = 1
    _finish()
    os._exit(code & 0xFF)


def _take_streams() -> None:
    """New ``sys.std*`` over the caller's descriptors, buffered as Python buffers its own
    (line-buffered on a terminal), and loggers writing to the resident's streams moved to them."""
    old = {id(sys.stdout), id(sys.stderr), id(sys.__stdout__), id(sys.__stderr__)}
    encoding, errors = sys.stdout.encoding, sys.stdout.errors
    unbuffered = bool(getattr(sys.stdout, "write_through", False))  # PYTHONUNBUFFERED, shared with the caller

    def text(fd: int, errors: str, line: bool) -> io.TextIOWrapper:
        raw = io.FileIO(fd, "w", closefd=False)
        return io.TextIOWrapper(
            raw if unbuffered else io.BufferedWriter(raw),
            encoding=encoding,
            errors=errors,
            line_buffering=line and not unbuffered,
            write_through=unbuffered,
        )

    sys.stdin = sys.__stdin__ = open(0, encoding=encoding, closefd=False)  # noqa: SIM115
    sys.stdout = sys.__stdout__ = text(1, errors, line=os.isatty(1))
    sys.stderr = sys.__stderr__ = text(2, "backslashreplace", line=True)
    loggers = [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]
    for logger in loggers:
        for handler in getattr(logger, "handlers", []):
            if type(handler) is logging.StreamHandler and id(handler.stream) in old:
                handler.setStream(sys.stderr)


def _reseed() -> None:
    """A fork copies the resident's random state; a new process would have drawn its own.
    (:mod:`random` reseeds itself at fork.)"""
    legacy = sys.modules.get("numpy.random")
    if legacy is not None:
        legacy.seed()


def _end_with_caller(connection: socket.socket) -> None:
    """The caller went away (killed, or its terminal closed): end the command as its own
    process would have ended, rather than work on for nobody."""
    try:
        while connection.recv(1):
            pass
    except OSError:
        pass
    os.kill(os.getpid(), signal.SIGTERM)


def _exit_status(code: object) -> int:  # as Python's own exit turns a SystemExit's code into one
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _finish() -> None:
    """What Python does at exit: wait for the command's own (non-daemon) threads, run the exit
    functions, flush the streams."""
    import atexit

    with contextlib.suppress(Exception):
        threading._shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
