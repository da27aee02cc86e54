"""Upload a folder to Zenodo through its documented REST API (developers.zenodo.org), once. Pure (no Django).

The flow: create a deposition with a reserved DOI, put each file into its bucket, set the metadata, and only when
asked publish. A retry never makes a second deposition: the deposition is recorded in the folder (:data:`STATE`)
before anything is uploaded, and a run that finds the record resumes it (a file already there with the same MD5 is
not sent again). Creating is the one call not safe to send twice: it carries a key of this folder's (in ``notes``),
so when its answer is lost the drafts are searched for the key before anything is created again. Zenodo's errors
become :class:`ZenodoError` with Zenodo's own message.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
import unicodedata
import urllib.parse
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.errors import ProviderError
from core.http import HttpError, JsonClient
from genderbias.errors import InputError
from genderbias.files.textfiles import open_regular

from .metadata import check_metadata

#: The deposit's metadata in the folder (Zenodo's GitHub integration reads the same file).
METADATA = ".zenodo.json"
#: Where the folder records its deposition (id, bucket, DOI), so that a retry resumes it.
STATE = ".zenodo-deposition.json"


class ZenodoError(ProviderError):
    """Zenodo refused or failed a call; the message is Zenodo's own where it gave one."""

    def __init__(self, message: str, *, upstream: bool = True, status: int | None = None) -> None:
        super().__init__(message)
        self.upstream = upstream
        self.status = status


class NotConfirmed(ValueError):
    """The person shown the files to deposit said no: nothing was sent."""


@dataclass
class Deposit:
    """What a deposit run did: the deposition, its DOI (reserved until published) and its files."""

    id: int
    doi: str
    published: bool
    url: str
    uploaded: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    resumed: bool = False


def _message(error: HttpError) -> str:
    """Zenodo's own words for a refusal (with the HTTP status): its ``message`` and each field error."""
    try:
        body = json.loads(error.text)
    except (ValueError, TypeError):
        body = None
    if isinstance(body, dict) and body.get("message"):
        text = str(body["message"])
        fields = [
            f"{e.get('field')}: {e.get('message') or e.get('messages')}"
            for e in body.get("errors") or []
            if isinstance(e, dict)
        ]
        status = f"HTTP {error.status}: " if error.status else ""
        return status + text + (f" ({'; '.join(fields)})" if fields else "")
    return str(error)


#: The longest file name (key) Zenodo's file store takes (invenio-files-rest's ``FILES_REST_OBJECT_KEY_MAX_LEN``).
MAX_NAME_CHARS = 255


def _read_regular(path: Path) -> bytes:
    """The bytes of ``path``, refused if it was swapped for a link after it was listed."""
    try:
        with open_regular(path) as handle:
            return handle.read()
    except InputError as exc:
        raise ValueError(f"{exc} (it changed after it was listed); run again") from None


def _name_problem(name: str) -> str | None:
    """Why Zenodo (or a reader of its record) would not take ``name`` as a file's key, or ``None``."""
    if len(name) > MAX_NAME_CHARS:
        return f"at most {MAX_NAME_CHARS} characters, not {len(name)}"
    if any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in name):
        return "a control character in the name"
    if "\\" in name:
        return "a backslash in the name (read as a folder by some clients)"
    if name in (".", "..") or name != name.strip():
        return "a name that is blank at an end or a folder's"
    return None


def deposited_files(folder: Path) -> list[Path]:
    """The folder's files to deposit: its regular files with a single link, but the hidden ones (bookkeeping) and
    sub-folders. A symbolic link, a hard link (a second name of a file elsewhere: the site's database, say), any
    other kind of entry, or a name Zenodo would refuse stops the deposit before any request, naming it."""
    files, refused = [], []
    for path in sorted(folder.iterdir()):
        if path.name.startswith("."):
            continue
        status = os.lstat(path)
        if stat.S_ISDIR(status.st_mode):
            continue
        if stat.S_ISLNK(status.st_mode):
            refused.append(f"{path.name}: a symbolic link")
        elif not stat.S_ISREG(status.st_mode):
            refused.append(f"{path.name}: not a regular file")
        elif status.st_nlink != 1:
            refused.append(f"{path.name}: a hard link ({status.st_nlink} names of one file): copy it, or move it out")
        elif problem := _name_problem(path.name):
            refused.append(f"{path.name!r}: {problem}")
        else:
            files.append(path)
    if refused:
        raise ValueError(f"{folder}: nothing sent; only regular files are deposited: " + "; ".join(refused))
    return files


def _write_state(folder: Path, state: dict[str, Any]) -> None:
    """Record the deposition atomically (a crash leaves the old record or the new one, never half)."""
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=f".{STATE}.")
    with os.fdopen(handle, "w") as out:
        json.dump(state, out, indent=1)
        out.write("\n")
    os.replace(temporary, folder / STATE)


def read_state(folder: Path) -> dict[str, Any]:
    """The folder's recorded deposition (empty when none)."""
    path = folder / STATE
    if not path.is_file():
        return {}
    try:
        state = json.loads(path.read_text())
    except ValueError as exc:
        raise ZenodoError(f"{path}: not the JSON this command writes ({exc}); move it away to start anew") from None
    return state if isinstance(state, dict) else {}


class ZenodoClient:
    """The calls of the deposit flow over :class:`core.http.JsonClient` (bearer token, back-off)."""

    def __init__(self, api_url: str, token: str, *, sleep: Callable[[float], None] | None = None) -> None:
        if not token:
            raise ZenodoError("no Zenodo access token: set ZENODO_TOKEN or the Zenodo connection", upstream=False)
        options: dict[str, Any] = {"deadline": 600.0, "timeout": 60.0}
        if sleep is not None:
            options["sleep"] = sleep
        self.http = JsonClient(api_url, {"Authorization": f"Bearer {token}"}, **options)

    def call(self, method: str, path: str, body: Any = None, **options: Any) -> Any:
        try:
            return self.http.request(method, path, body, **options)
        except HttpError as error:
            if error.status == 401:
                raise ZenodoError(
                    f"Zenodo refused the access token ({_message(error)}); set a valid ZENODO_TOKEN",
                    upstream=False,
                    status=401,
                ) from None
            if error.unknown_outcome:
                raise
            upstream = error.upstream or error.status in (429,)
            raise ZenodoError(
                f"Zenodo: {method} {path.split('?')[0]} failed: {_message(error)}",
                upstream=upstream,
                status=error.status,
            ) from None


def _doi(deposition: dict[str, Any]) -> str:
    """The published record's DOI, else the reserved one."""
    return str(
        deposition.get("doi") or ((deposition.get("metadata") or {}).get("prereserve_doi") or {}).get("doi") or ""
    )


def _find_draft(client: ZenodoClient, key: str) -> dict[str, Any] | None:
    """The draft carrying ``key`` in its notes (a creation whose answer was lost), if any."""
    drafts = client.call("GET", "deposit/depositions?status=draft&sort=mostrecent&size=100") or []
    for draft in drafts if isinstance(drafts, list) else []:
        if key in str((draft.get("metadata") or {}).get("notes") or ""):
            return draft
    return None


def deposit_folder(
    folder: str | os.PathLike,
    client: ZenodoClient,
    *,
    publish: bool = False,
    confirm: Callable[[list[str]], bool] | None = None,
) -> Deposit:
    """Deposit ``folder`` (its files and its :data:`METADATA`) on Zenodo; without ``publish`` a draft with a
    reserved DOI. ``confirm`` is shown the file names before any request (:class:`NotConfirmed` if it says no).
    Raises :class:`ZenodoError`, or ``ValueError`` for metadata or files Zenodo would refuse, naming them.
    """
    folder = Path(folder)
    metadata_path = folder / METADATA
    if not metadata_path.is_file():
        raise ValueError(f"{folder} has no {METADATA}: write it with publish_dataset or paper first")
    try:
        metadata = json.loads(metadata_path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ValueError(f"{metadata_path}: not JSON ({exc})") from None
    check_metadata(metadata, str(metadata_path))
    files = deposited_files(folder)
    if not files:
        raise ValueError(f"{folder} holds no file to deposit")
    if confirm is not None and not confirm([path.name for path in files]):
        raise NotConfirmed(f"{folder}: the deposit was not confirmed; nothing was sent")

    state = read_state(folder)
    resumed = bool(state.get("id"))
    if not state.get("key"):
        state = {"key": uuid.uuid4().hex}
        _write_state(folder, state)  # before the creation: a lost answer is found again by this key
    deposition: dict[str, Any] | None = None
    if state.get("id"):
        deposition = client.call("GET", f"deposit/depositions/{state['id']}")
    else:
        deposition = _find_draft(client, state["key"])
        if deposition is None:
            marked = {**metadata, "notes": f"deposit key {state['key']}", "prereserve_doi": True}
            try:
                deposition = client.call("POST", "deposit/depositions", {"metadata": marked}, repeatable=False)
            except HttpError as error:  # the answer was lost: was it created?
                deposition = _find_draft(client, state["key"])
                if deposition is None:
                    raise ZenodoError(
                        f"Zenodo did not answer the creation of the deposition ({error}) and no draft carries this "
                        f"folder's key: run again (it looks again before creating)"
                    ) from None
        else:
            resumed = True
        state |= {
            "id": deposition["id"],
            "bucket": deposition["links"]["bucket"],
            "doi": _doi(deposition),
            "html": (deposition.get("links") or {}).get("html", ""),
        }
        _write_state(folder, state)  # recorded before any upload

    if deposition.get("submitted") or deposition.get("state") == "done":
        return Deposit(state["id"], _doi(deposition), True, _record_url(deposition), kept=[f.name for f in files],
                       resumed=True)  # fmt: skip

    present = {
        str(f.get("filename") or f.get("key")): str(f.get("checksum") or "").removeprefix("md5:")
        for f in deposition.get("files") or []
    }
    uploaded, kept = [], []
    bucket = state["bucket"]
    for path in files:
        content = _read_regular(path)
        digest = hashlib.md5(content, usedforsecurity=False).hexdigest()
        if present.get(path.name) == digest:
            kept.append(path.name)
            continue
        key = urllib.parse.quote(path.name, safe="")  # one path segment: '#', '?', '%', spaces kept in the name
        answer = client.call("PUT", f"{bucket}/{key}", content=content) or {}
        checksum = str(answer.get("checksum") or "").removeprefix("md5:")
        if checksum and checksum != digest:
            raise ZenodoError(f"Zenodo stored {path.name} with MD5 {checksum}, not the file's {digest}: run again")
        uploaded.append(path.name)
    deposition = client.call(
        "PUT", f"deposit/depositions/{state['id']}", {"metadata": {**metadata, "prereserve_doi": True}}
    )
    state["doi"] = _doi(deposition) or state.get("doi", "")
    _write_state(folder, state)
    if not publish:
        return Deposit(state["id"], state["doi"], False, state.get("html", ""), uploaded, kept, resumed)
    try:
        record = client.call("POST", f"deposit/depositions/{state['id']}/actions/publish", repeatable=False)
    except HttpError as error:  # lost: look at the deposition itself
        record = client.call("GET", f"deposit/depositions/{state['id']}")
        if not (record.get("submitted") or record.get("state") == "done"):
            raise ZenodoError(
                f"Zenodo did not answer the publication ({error}) and it is not published: run again"
            ) from None
    state |= {"doi": _doi(record), "published": True}
    _write_state(folder, state)
    return Deposit(state["id"], state["doi"], True, _record_url(record), uploaded, kept, resumed)


def _record_url(deposition: dict[str, Any]) -> str:
    links = deposition.get("links") or {}
    return str(links.get("record_html") or links.get("html") or links.get("doi") or "")
