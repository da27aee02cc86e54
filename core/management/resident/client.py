"""``manage.py``'s side of the resident process: hand a command over, or say it cannot.

Standard library only, and only the cheap part of it: this runs before Django is imported, and
its whole cost is what a command pays instead of start-up. :func:`run` returns the command's
exit status, or ``None`` when the command should run in this process as before.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import socket
import stat
import struct
import sys
import time

#: Set to ``off`` (or 0/false/no) to run every command in its own process.
SWITCH = "MANAGE_RESIDENT"
#: A terminal's own variables: they differ between two shells of one user and change nothing
#: that the settings read, so they do not separate residents (the command still gets its own).
VOLATILE = frozenset(
    {
        "_",
        "PWD",
        "OLDPWD",
        "SHLVL",
        "COLUMNS",
        "LINES",
        "TERM",
        "TERM_PROGRAM",
        "TERM_PROGRAM_VERSION",
        "COLORTERM",
        "LS_COLORS",
        "PS1",
        "DISPLAY",
        "WINDOWID",
        "SSH_CLIENT",
        "SSH_CONNECTION",
        "SSH_TTY",
        "SSH_AUTH_SOCK",
        "TMUX",
        "TMUX_PANE",
        "STY",
        "WINDOW",
    }
)
#: How long a command waits for a resident it started to listen (a loaded machine can take
#: several seconds to import Django and the libraries); past it the command runs itself.
START_SECONDS = 60.0
_HEADER = struct.Struct("!I")
_SUN_PATH = 108  # bytes in a Unix socket's address on Linux, with its final NUL


class Refused(Exception):
    """The resident will not run this command (interactive, changed files, another environment)."""


def enabled(environ: dict[str, str] | os._Environ = os.environ) -> bool:
    return environ.get(SWITCH, "on").strip().lower() not in {"0", "off", "false", "no"}


def folder() -> str | None:
    """The user's private folder for residents' sockets, created if missing; ``None`` if it is
    not a real folder owned by this user that nobody else can enter (then no resident is used:
    a socket another user could replace would hand them our commands' terminals)."""
    base = os.environ.get("XDG_RUNTIME_DIR") or os.environ.get("TMPDIR") or "/tmp"
    path = os.path.join(base, f"genderbias-resident-{os.getuid()}")
    try:
        os.mkdir(path, mode=0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        return None
    return path


def key(environ: dict[str, str], base_dir: str) -> str:
    """What a resident was started for: commands share one only if all of it is equal. (The
    interpreter's flags follow from the environment, as commands given options on the
    interpreter's command line never use a resident.)"""
    material = [
        sys.executable,
        sys.version,
        os.path.realpath(base_dir),
        os.getuid(),
        sorted((name, value) for name, value in environ.items() if name not in VOLATILE),
    ]
    return hashlib.sha256(json.dumps(material, default=str).encode()).hexdigest()[:24]


def socket_path(environ: dict[str, str], base_dir: str) -> str | None:
    """Where the resident for this environment listens; ``None`` where no resident can (no
    private folder, or a path longer than a Unix socket's address holds)."""
    where = folder()
    if where is None:
        return None
    path = os.path.join(where, f"{key(environ, base_dir)}.sock")
    return path if len(os.fsencode(path)) < _SUN_PATH else None


def run(argv: list[str], base_dir: str) -> int | None:
    """Run ``manage.py ARGV`` in a resident (starting one if none listens): its exit status,
    or ``None`` if this process should run the command itself."""
    if not enabled() or len(sys.orig_argv) - len(sys.argv) != 1:
        return None  # switched off, or the interpreter was given options (-X dev, -W error…)
    path = socket_path(dict(os.environ), base_dir)
    if path is None or not _standard_streams_open():
        return None
    for _ in range(2):  # a resident that found its files changed exits: start a fresh one, once
        connection = _connect(path) or _start_and_connect(path, base_dir)
        if connection is None:
            return None
        try:
            return _hand_over(connection, argv)
        except Refused as why:
            if str(why) != "stale":
                return None
        finally:
            connection.close()
    return None


def request(path: str | os.PathLike, op: str, **fields) -> dict | None:
    """Ask the resident at ``path`` a question that needs no command: ``usage`` (its CPU and
    its commands' so far; ``settle=True`` waits for running ones to end) or ``stop``. Its
    answer, or ``None`` if none listens."""
    connection = _connect(path)
    if connection is None:
        return None
    with connection:
        payload = json.dumps({"op": op, **fields}).encode()
        connection.sendall(_HEADER.pack(len(payload)) + payload)
        line = connection.makefile("rb").readline()
    return json.loads(line) if line else None


def settled_usage(path: str | os.PathLike) -> dict:
    """The resident's ``usage`` once the commands it runs have ended: ``cpu`` (its own and its
    ended forks' seconds so far, what a benchmark adds to a command's own) and ``maxrss_kb``. An
    error if none listens: a figure without the resident's part would be wrong."""
    answer = request(path, "usage", settle=True)
    if answer is None:
        raise RuntimeError(f"no resident process listens at {path}: its CPU cannot be counted")
    return answer["usage"]


def _standard_streams_open() -> bool:
    try:
        for fd in (0, 1, 2):
            os.fstat(fd)
    except OSError:
        return False
    return True


def _connect(path: str | os.PathLike) -> socket.socket | None:
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(os.fspath(path))
    except OSError:
        connection.close()
        return None
    return connection


def _start_and_connect(path: str, base_dir: str) -> socket.socket | None:
    """Start a resident for this environment in the background and wait until it listens.
    Two commands starting at once start two; the server's lock keeps one."""
    import subprocess

    log = path.removesuffix(".sock") + ".log"
    with open(log, "wb") as out:
        os.chmod(log, 0o600)
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "core.management.resident.server",
                str(path),
            ],
            cwd=base_dir,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
        )
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        connection = _connect(path)
        if connection is not None:
            return connection
        ended = process.poll()
        if ended not in (None, 0):
            return None  # it could not start (a broken setting…): the command itself says why
        if ended == 0:  # another resident for this environment held the lock: it is listening or soon
            deadline = min(deadline, time.monotonic() + 2.0)
        time.sleep(0.01)
    return None


#: Limits a shell's ``ulimit`` sets, which the command's fork takes on (it can lower its own).
LIMITS = ("RLIMIT_AS", "RLIMIT_DATA", "RLIMIT_RSS", "RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_CORE")


def _process() -> dict:
    """What a process inherits beyond its environment: umask, niceness, resource limits."""
    import resource

    mask = os.umask(0o022)
    os.umask(mask)
    return {
        "umask": mask,
        "nice": os.getpriority(os.PRIO_PROCESS, 0),
        "limits": {name: resource.getrlimit(getattr(resource, name)) for name in LIMITS if hasattr(resource, name)},
    }


def _hand_over(connection: socket.socket, argv: list[str]) -> int:
    payload = json.dumps(
        {"op": "run", "argv": argv, "cwd": os.getcwd(), "env": dict(os.environ), "process": _process()}
    ).encode()
    message = _HEADER.pack(len(payload)) + payload
    replies = connection.makefile("rb")
    try:  # until the command's process is named, nothing ran: any failure falls back
        sent = socket.send_fds(connection, [message], [0, 1, 2])
        if sent < len(message):
            connection.sendall(message[sent:])
        first = json.loads(replies.readline() or b'{"refused": "closed"}')
    except (OSError, ValueError) as error:
        raise Refused("closed") from error
    if "pid" not in first:  # refused, or its fork ended before starting the command
        raise Refused(first.get("refused", "failed"))
    child = int(first["pid"])
    forwarded: list[int] = []

    def forward(signum, _frame):
        forwarded.append(signum)
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signum)

    def suspend(_signum, _frame):  # Ctrl-Z: stop the command, then this process; go on together
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGSTOP)
        signal.signal(signal.SIGTSTP, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTSTP)
        signal.signal(signal.SIGTSTP, suspend)
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGCONT)

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGWINCH):
        if signal.getsignal(signum) is not signal.SIG_IGN:  # ignored here (nohup, a background job): there too
            signal.signal(signum, forward)
    if signal.getsignal(signal.SIGTSTP) is not signal.SIG_IGN:
        signal.signal(signal.SIGTSTP, suspend)
    last = replies.readline()  # the resident's word on how the command's process ended
    end = json.loads(last) if last else {"signal": forwarded[-1]} if forwarded else {"exit": 1}
    if "signal" in end:  # it died of a signal (Ctrl-C's KeyboardInterrupt, one passed on): so does this process
        signum = int(end["signal"])
        with contextlib.suppress(OSError, ValueError):  # SIGKILL and SIGSTOP take no handler
            signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return 128 + signum
    return int(end["exit"])
