"""Connections to outside services changed on the site: stored (secrets sealed), cleared, re-sealed
under a new key, and tested by a background job (never inside a request), whose message says what
worked or went wrong, never a secret. Reads are in :mod:`core.selectors`.
"""

from __future__ import annotations

import logging
import urllib.parse
from collections.abc import Callable, Iterable, Mapping

from django.conf import settings
from django.db import transaction

from core.connection_kinds import HUGGINGFACE, KINDS, ZENODO, ConnectionKind
from core.errors import ServiceError
from core.http import HttpError, JsonClient
from core.jobs import background_job
from core.models import Connection, Job
from core.redaction import mask_secret
from core.sealing import KEY_SETTING, SealError, key_in_file, reseal, seal, unseal
from core.selectors import (
    connections_key,
    connections_key_file,
    environment_value,
    huggingface_settings,
    zenodo_settings,
)

logger = logging.getLogger(__name__)

#: The longest value a field takes (an address, an id, a token).
MAX_VALUE_CHARS = 2000


class ConnectionTestFailed(ServiceError):
    """A connection test that got an answer it did not want, or none: the Job fails with this message."""


def kind_of(kind: str):
    """The declared connection ``kind``, or a ServiceError naming the known ones."""
    try:
        return KINDS[kind]
    except KeyError:
        raise ServiceError(f"kind: unknown connection {kind!r}; known: {', '.join(KINDS)}") from None


def _checked(kind, values: Mapping[str, object]) -> dict[str, str]:
    names = {f.name for f in kind.fields}
    unknown = sorted(set(values) - names)
    if unknown:
        raise ServiceError(
            f"{unknown[0]}: not a field of the {kind.kind} connection; its fields: {', '.join(sorted(names))}"
        )
    checked = {}
    for name, value in values.items():
        if value is None:
            value = ""
        if not isinstance(value, str):
            raise ServiceError(f"{name}: a text value, not {type(value).__name__}")
        value = value.strip()
        if len(value) > MAX_VALUE_CHARS:
            raise ServiceError(f"{name}: at most {MAX_VALUE_CHARS} characters")
        if any(ord(c) < 32 or ord(c) == 127 for c in value):
            raise ServiceError(f"{name}: control characters are not allowed")
        spec = kind.field(name)
        if spec.url and value:
            try:
                parts = urllib.parse.urlsplit(value)
                good = parts.scheme in ("http", "https") and bool(parts.hostname) and (parts.port or 1) > 0
            except ValueError:  # "http://[", a port that is not a number
                good = False
            if not good:
                raise ServiceError(f"{name}: an http(s) address such as {spec.default or 'https://host/v1/'}")
        if spec.choices and value and value not in spec.choices:
            raise ServiceError(f"{name}: one of {', '.join(spec.choices)}, got {value[:60]!r}")
        checked[name] = value
    return checked


def save_connection(kind: str, values: Mapping[str, object], *, clear: Iterable[str] = (), user=None) -> Connection:
    """Store the fields given in ``values`` for connection ``kind``, in one transaction.

    A plain field given empty is cleared; a secret given empty is kept (a form never shows it, so
    empty means "unchanged"); ``clear`` names secrets to remove. Secrets are sealed with
    :func:`_sealing_key`; with a key that cannot open those already stored (unless all are replaced
    or cleared), nothing is written.
    """
    spec = kind_of(kind)
    checked = _checked(spec, values)
    clear = set(clear)
    not_secret = sorted(clear - set(spec.secret_names))
    if not_secret:
        raise ServiceError(f"clear: {not_secret[0]} is not a secret of the {kind} connection")
    new_secrets = {name: value for name, value in checked.items() if spec.field(name).secret and value}
    with transaction.atomic():
        row, _ = Connection.objects.select_for_update().get_or_create(kind=kind)
        secrets: dict[str, str] = {}
        if row.sealed:
            try:
                secrets = unseal(row.sealed, connections_key())
            except SealError:
                if not set(spec.secret_names) <= set(new_secrets) | clear:
                    raise
        secrets.update(new_secrets)
        for name in clear:
            secrets.pop(name, None)
            if name in new_secrets:
                raise ServiceError(f"{name}: given a new value and asked to clear it")
        plain = dict(row.values)
        for name, value in checked.items():
            if spec.field(name).secret:
                continue
            if value:
                plain[name] = value
            else:
                plain.pop(name, None)
        _refuse_a_secret_sent_elsewhere(spec, row.values, plain, secrets, new_secrets)
        row.values = plain
        row.sealed = seal(secrets, _sealing_key()) if secrets else ""
        row.updated_by = user if user is not None and user.is_authenticated else None
        row.save()
    logger.info("connection %s changed by %s: fields %s", kind, row.updated_by, sorted(checked) + sorted(clear))
    return row


def _sealing_key() -> str:
    """The key that seals: ``CONNECTIONS_KEY``, else the site's data folder's, made there by the first secret."""
    return getattr(settings, KEY_SETTING, "") or key_in_file(connections_key_file(), create=True)


def seal_secret(value: str) -> str:
    """One secret kept outside the connections (the Prolific webhook secret), sealed as they are."""
    return seal({"value": value}, _sealing_key())


def open_secret(sealed: str) -> str:
    """The secret :func:`seal_secret` sealed; :class:`core.sealing.SealError` when no key opens it."""
    return unseal(sealed, connections_key()).get("value", "")


def _refuse_a_secret_sent_elsewhere(spec, before: dict, after: dict, secrets: dict, new_secrets: dict) -> None:
    """A new address goes with its secret given again: else a stored token would be sent to whatever
    host the person changing the address chose."""
    moved = [f.name for f in spec.fields if f.url and before.get(f.name) != after.get(f.name)]
    if not moved:
        return
    from_environment = [f for f in spec.fields if f.secret and environment_value(f) is not None]
    if from_environment:
        raise ServiceError(
            f"{moved[0]}: the {spec.kind} connection's {from_environment[0].name} is set in the environment "
            f"({from_environment[0].setting}); set its address there too, not on the site"
        )
    kept = [name for name in spec.secret_names if name in secrets and name not in new_secrets]
    if kept:
        raise ServiceError(
            f"{moved[0]}: a new address needs its {kept[0]} entered again (or cleared), so that a stored "
            "secret is never sent to another host"
        )


def delete_connection(kind: str) -> bool:
    """Forget what the site stores for ``kind`` (the environment and defaults stay in force)."""
    kind_of(kind)
    deleted, _ = Connection.objects.filter(kind=kind).delete()
    return bool(deleted)


#: Sealed secrets kept by the apps above core (the Prolific webhook secret): each re-seals its rows
#: with the first of the keys given and returns how many (:func:`register_resealer`, at ``ready()``).
_RESEALERS: list[Callable[[str], int]] = []


def register_resealer(reseal_rows: Callable[[str], int]) -> None:
    """``reseal_rows(keys)`` joins :func:`reseal_connections` (a key rotation re-seals its secrets too)."""
    if reseal_rows not in _RESEALERS:
        _RESEALERS.append(reseal_rows)


def reseal_connections() -> int:
    """Seal every stored secret again (the registered ones included) with the first key of
    ``CONNECTIONS_KEY``; how many. All or none: one that no key opens stops it."""
    key = connections_key()
    count = 0
    with transaction.atomic():
        for row in Connection.objects.select_for_update().exclude(sealed=""):
            try:
                row.sealed = reseal(row.sealed, key)
            except SealError as exc:
                raise SealError(f"{row.kind}: {exc}") from None
            row.save(update_fields=["sealed", "updated"])
            count += 1
        for reseal_rows in _RESEALERS:
            count += reseal_rows(key)
    return count


# --- the test -------------------------------------------------------------------------


def _client(base_url: str, headers: dict[str, str]) -> JsonClient:
    timeout = settings.CONNECTION_TEST_TIMEOUT
    try:
        return JsonClient(base_url, headers, timeout=timeout, deadline=2 * timeout, max_attempts=2, max_delay=timeout)
    except ValueError as exc:
        raise ConnectionTestFailed(f"the address: {exc}") from None


def _failure(exc: HttpError, base_url: str, secret_label: str, secret: str) -> ConnectionTestFailed:
    host = urllib.parse.urlsplit(base_url).hostname or base_url
    text = str(exc)
    if exc.status in (401, 403):
        message = f"{exc.status}: {host} refused the {secret_label} (wrong, expired or without the rights needed)"
    elif exc.status == 404:
        message = f"404: {base_url} answers, but not as this service's API (check the address)"
    elif exc.status:
        detail = " ".join(exc.text.split())[:200]
        message = f"{host} answered {exc.status}" + (f": {detail}" if detail else "")
    elif exc.kind == "deadline" or "timed out" in text:
        message = f"no answer from {host} within {settings.CONNECTION_TEST_TIMEOUT:g} s (timeout)"
    elif any(
        s in text for s in ("Name or service not known", "nodename nor servname", "getaddrinfo", "name resolution")
    ):
        message = f"the host {host} cannot be found (DNS): check the address"
    elif "refused" in text.lower():
        message = f"{host} refused the connection: nothing listens at that address"
    else:
        message = f"{host}: {text}"
    # A server that echoes the key, in any spelling, must not put it on the page (core.redaction).
    return ConnectionTestFailed(mask_secret(message, secret))


def _call(client: JsonClient, method: str, path: str, body=None, *, label: str, secret: str):
    try:
        return client.request(method, path, body)
    except HttpError as exc:
        raise _failure(exc, client.base_url, label, secret) from None


def check_huggingface() -> str:
    """The Hub: the token accepted (``whoami-v2``), and whether it may write (publishing needs it)."""
    conn = huggingface_settings()
    if not conn.token:
        raise ConnectionTestFailed("no access token is set")
    client = _client(conn.endpoint, {"Authorization": f"Bearer {conn.token}"})
    me = _call(client, "GET", "api/whoami-v2", label="access token", secret=conn.token)
    me = me if isinstance(me, dict) else {}
    role = ((me.get("auth") or {}).get("accessToken") or {}).get("role", "")
    name = me.get("name", "")
    message = f"Hugging Face: token accepted{f' ({name})' if name else ''}"
    if role and role not in ("write", "fineGrained"):
        return message + f"; its role is {role}: publish_dataset --push needs a write token."
    return message + "."


def check_zenodo() -> str:
    """Zenodo: the token accepted and allowed to deposit (its depositions listed, ``deposit:write``)."""
    conn = zenodo_settings()
    if not conn.token:
        raise ConnectionTestFailed("no access token is set")
    client = _client(conn.api_url, {"Authorization": f"Bearer {conn.token}"})
    _call(client, "GET", "deposit/depositions?size=1", label="access token", secret=conn.token)
    return f"Zenodo: token accepted for depositions at {conn.api_url}."


#: Each connection's test, by kind: the shared ones here, a platform's registered with its kind.
CHECKS: dict[str, Callable[[], str]] = {
    # CHAT's test is the chat labeller's own request: annotation registers it (annotation.apps)
    HUGGINGFACE.kind: check_huggingface,
    ZENODO.kind: check_zenodo,
}


def register_connection(kind: ConnectionKind, check: Callable[[], str]) -> None:
    """A crowd platform's connection and its test (at the platform's ``ready()``), listed after the shared ones."""
    KINDS[kind.kind] = kind
    CHECKS[kind.kind] = check


@background_job("core.test_connection", task="core.tasks.test_connection_task", failures=(ServiceError,))
def connection_test_job(job: Job, kind: str) -> None:
    job.message = CHECKS[kind]()
    job.result = {"kind": kind, "ok": True}


def start_test_connection(kind: str) -> Job:
    """Start the test of connection ``kind`` as a Job; the connection's row remembers it for the page."""
    kind_of(kind)
    with transaction.atomic():
        row, _ = Connection.objects.select_for_update().get_or_create(kind=kind)
        job = connection_test_job.start(f"Test the {KINDS[kind].title} connection", kind)
        row.last_test = job
        row.save(update_fields=["last_test"])
    return job
