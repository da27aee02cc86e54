"""Publishing a batch as a dataset folder a researcher uploads as it is, zipped for download, or pushed to the Hub.

:func:`publish_dataset` writes the folder (a Parquet file per configuration, the card, ``croissant.json``) from one
read of the study's facts; a file, not state. It is written whole or not at all, through a temporary folder swapped
into place, with a manifest of each file's SHA-256: an existing folder is replaced only when it holds nothing but the
manifest's files, unchanged; anything else is refused by name, never deleted (``force``: docs/dataset-publishing.md).
:func:`push_folder` uploads through ``huggingface_hub`` when a token is given, else names the command to run.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import secrets
import shlex
import shutil
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from django.utils import timezone

from annotation.models import Batch
from annotation.selectors import CITATION, study_facts
from annotation.services import reading_answers
from core.errors import ProviderError, ServiceError
from genderbias.files.atomic import file_sha256, replace_folder
from publishing import croissant, hub_card, tables

CROISSANT = "croissant.json"
#: The dataset's citation (Citation File Format) and Zenodo deposit metadata, beside the card.
CITATION_CFF = "CITATION.cff"
ZENODO = ".zenodo.json"
#: The manifest of what publish_dataset wrote (file -> SHA-256): what a re-run may replace.
MANIFEST = ".publish_dataset.json"
README = "README.md"
#: Seconds a push waits on the Hub for one step of a request (connect, send, read) before it gives up.
PUSH_TIMEOUT = 60


class HubError(ProviderError):
    """The Hub (or the way to it) failed an upload: trying again later may work (502 in the API)."""

    upstream = True


@dataclass(frozen=True)
class Publication:
    """What :func:`publish_dataset` wrote."""

    path: Path
    files: list[str]
    rows: dict[str, int]
    license: str
    #: Files of the folder this publication left in place (only with ``force``: the others' files).
    kept: list[str] = field(default_factory=list)
    researcher_fields: dict[str, str] = field(default_factory=lambda: dict(hub_card.RESEARCHER_FIELDS))


def _write_folder(
    batch: Batch,
    folder: Path,
    license_id: str,
    with_judgments: bool,
    license_terms: dict[str, str],
    paper: str | None = None,
) -> tuple[list[str], dict[str, int]]:
    facts = study_facts(batch)
    configs = tables.configs_for(with_judgments)
    # A fresh secret per publication, never stored: the annotators' dataset ids link to no other publication.
    salt = secrets.token_bytes(tables.SALT_BYTES) if with_judgments else None
    rows = tables.config_rows(facts["results"], with_judgments, salt, facts["label_agents"])
    import pyarrow.parquet as pq

    digests: dict[str, str] = {}
    sizes: dict[str, int] = {}
    for config in configs:
        path = tables.write_parquet(config, rows[config.name], folder / config.file_name)
        digests[config.file_name] = file_sha256(path)
        sizes[config.name] = pq.read_table(path).nbytes  # the split's Arrow size, as `datasets` records it
    counts = {config.name: len(rows[config.name]) for config in configs}
    published = timezone.now().date().isoformat()
    title = f"{batch.name}: gender-annotated queries"
    shared = {"license_id": license_id, "published": published, "citation": CITATION, "license_terms": license_terms}
    texts = {
        README: hub_card.card(facts, configs, counts, pretty_name=title, sizes=sizes, **shared),
        CROISSANT: _json(croissant.croissant(facts, configs, digests, title=title, **shared)),
        CITATION_CFF: hub_card.citation_cff(facts, title, published, license_id, CITATION),
        ZENODO: _json(hub_card.zenodo_json(facts, title, published, license_id, paper)),
    }
    for name, text in texts.items():
        (folder / name).write_text(text, encoding="utf-8")
    files = [c.file_name for c in configs] + list(texts)
    digests |= {name: file_sha256(folder / name) for name in texts}
    manifest = {"written_by": "publish_dataset", "batch": batch.name, "files": {name: digests[name] for name in files}}
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return files, counts


def _json(value: object) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def _manifest(folder: Path) -> dict[str, str]:
    """The files (name -> SHA-256) of the manifest in ``folder``; empty when it has none (or an unreadable one)."""
    try:
        files = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    if not isinstance(files, dict):
        return {}
    # Plain names in the folder only: a manifest naming "../x" must never make a re-run touch x.
    return {str(k): str(v) for k, v in files.items() if str(k) == Path(str(k)).name and str(k) not in (".", "..")}


def foreign_files(folder: Path) -> tuple[list[str], list[str]]:
    """What in ``folder`` a re-run must not delete, by name: entries its manifest does not list (a folder with a
    trailing ``/``), and listed files whose SHA-256 changed; both empty: replacing it loses nothing."""
    written = _manifest(folder)
    unknown, edited = [], []
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        if entry.name == MANIFEST and written:
            continue
        if entry.name not in written or entry.is_symlink() or not entry.is_file():
            unknown.append(entry.name + ("/" if entry.is_dir() and not entry.is_symlink() else ""))
        elif file_sha256(entry) != written[entry.name]:
            edited.append(entry.name)
    return unknown, edited


def _check_target(target: Path, force: bool) -> bool:
    """Refuse a target a publication would harm; True when the existing folder is written into (``force``)."""
    if not target.parent.is_dir():
        raise ServiceError(f"cannot write {target}: the folder {target.parent} does not exist")
    if target.is_symlink():
        raise ServiceError(
            f"{target} is a symbolic link; publish_dataset does not replace links: pass the folder it points to "
            f"({os.path.realpath(target)}) as --out"
        )
    if target.exists() and not target.is_dir():
        raise ServiceError(f"cannot write {target}: it is a file, not a folder")
    if not os.access(target.parent, os.W_OK):
        raise ServiceError(f"cannot write {target}: the folder {target.parent} is not writable")
    if not target.exists() or not any(target.iterdir()):
        return False
    unknown, edited = foreign_files(target)
    if not unknown and not edited:
        return False
    if force:
        if not os.access(target, os.W_OK):
            raise ServiceError(f"cannot write into {target}: it is not writable")
        return True
    found = []
    if unknown:
        found.append("files publish_dataset did not write: " + ", ".join(unknown))
    if edited:
        found.append("files edited since it wrote them: " + ", ".join(edited))
    raise ServiceError(
        f"{target} holds {'; and '.join(found)}. Nothing was changed. Choose another --out, or pass --force to "
        "write the dataset's files into it (overwriting those it writes, keeping every other file)."
    )


def _write_into(staging: Path, target: Path, files: list[str]) -> list[str]:
    """``force``: move the new files over the target's one by one; returns the target's files left in place."""
    previous = _manifest(target)
    for name in [*files, MANIFEST]:
        os.replace(staging / name, target / name)
    for name, digest in previous.items():  # ours, unchanged and no longer written: nothing is lost
        path = target / name
        if name not in files and path.is_file() and not path.is_symlink() and file_sha256(path) == digest:
            path.unlink()
    return sorted(p.name for p in target.iterdir() if p.name not in files and p.name != MANIFEST)


def publish_dataset(
    batch: Batch,
    out: str | os.PathLike,
    license_id: str,
    with_judgments: bool = False,
    force: bool = False,
    license_name: str | None = None,
    license_link: str | None = None,
    paper: str | None = None,
) -> Publication:
    """Write ``batch``'s dataset folder at ``out`` (see the module's docstring); returns what it wrote.

    ``license_id``: one of :data:`publishing.hub_card.HUB_LICENSES` (``other`` needs ``license_name`` and
    ``license_link``); ``with_judgments`` adds the raw judgments under dataset-local pseudonyms; ``force`` writes
    into a folder holding other (or edited) files one file at a time, overwriting its own and removing those of its
    previous manifest no longer written, unchanged; ``paper``: the DOI or address of the paper it supplements.
    """
    try:
        license_id = hub_card.check_license(license_id)
        license_terms = hub_card.check_license_terms(license_id, license_name, license_link)
    except ValueError as exc:
        raise ServiceError(str(exc)) from None
    if paper:
        from publishing.zenodo.metadata import related

        try:  # refused before anything is written
            related(paper, "isSupplementTo", "publication-article")
        except ValueError as exc:
            raise ServiceError(f"--paper: {exc}") from None
    target = Path(os.path.abspath(out))  # "..", "a/../b" normalised; a symbolic link is not followed
    into = _check_target(target, force)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    kept: list[str] = []
    try:
        with reading_answers(batch, "A dataset"):  # a correction after it is refused
            files, counts = _write_folder(batch, staging, license_id, with_judgments, license_terms, paper)
        if into:
            kept = _write_into(staging, target, files)
        else:
            replace_folder(staging, target)
    except OSError as exc:
        state = "some of its files may already be the new ones" if into else "it was left as it was"
        raise ServiceError(f"could not write {target} ({type(exc).__name__}: {exc}); {state}") from None
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return Publication(path=target, files=files, rows=counts, license=license_id, kept=kept)


def publication_zip(
    batch: Batch,
    license: str,
    with_judgments: bool = False,
    license_name: str | None = None,
    license_link: str | None = None,
) -> tuple[str, bytes]:
    """The dataset folder as a zip (file name, bytes) for download: written in a temporary folder, then zipped.
    The keywords are the page's form's and the API's fields (``publication_zip(batch, **fields)``)."""
    with tempfile.TemporaryDirectory(prefix="publish-") as tmp:
        name = croissant.dataset_name(batch.name)
        publication = publish_dataset(
            batch,
            Path(tmp) / name,
            license,
            with_judgments,
            license_name=license_name,
            license_link=license_link,
        )
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for file_name in publication.files:
                archive.write(publication.path / file_name, f"{name}/{file_name}")
    return f"{name}-dataset.zip", buffer.getvalue()


def upload_command(folder: str | os.PathLike, repo_id: str, private: bool = False) -> str:
    """The one command that uploads ``folder`` as dataset ``repo_id`` (``hf``, the CLI of huggingface_hub)."""
    command = ["hf", "upload", repo_id, str(folder), ".", "--repo-type", "dataset"]
    if private:
        command.append("--private")
    command += ["--exclude", MANIFEST]  # the manifest is for re-runs here, not for the Hub
    return shlex.join(command)


@contextlib.contextmanager
def _bounded_hub_client(timeout: float) -> Iterator[None]:
    """huggingface_hub's shared HTTP client with a timeout, for the block only (its default waits forever on a
    silent server): the default client, its request hook kept, and the previous factory put back afterwards."""
    import httpx2  # huggingface_hub's HTTP client
    from huggingface_hub import set_client_factory
    from huggingface_hub.utils import _http

    previous = _http._GLOBAL_CLIENT_FACTORY  # no public getter in huggingface_hub 1.x

    def bounded() -> httpx2.Client:
        client = previous()
        client.timeout = httpx2.Timeout(timeout)
        if _http.hf_request_event_hook not in client.event_hooks.get("request", []):
            client.event_hooks = {
                **client.event_hooks,
                "request": [_http.hf_request_event_hook, *client.event_hooks.get("request", [])],
            }
        return client

    set_client_factory(bounded)
    try:
        yield
    finally:
        set_client_factory(previous)


def check_repo_id(repo_id: str) -> str:
    """``repo_id`` if it is a Hub dataset id OWNER/NAME by huggingface_hub's own rules, else a ServiceError:
    checked before any request, so a typo does not read like a Hub outage."""
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    if not isinstance(repo_id, str) or repo_id.count("/") != 1 or not all(repo_id.split("/")):
        raise ServiceError(f"not a Hub repository id: {repo_id!r} (use OWNER/NAME)")
    try:
        validate_repo_id(repo_id)
    except HFValidationError as exc:
        raise ServiceError(f"not a Hub repository id: {repo_id!r} (use OWNER/NAME): {exc}") from None
    return repo_id


def push_folder(
    folder: str | os.PathLike,
    repo_id: str,
    *,
    token: str | None,
    private: bool = False,
    endpoint: str | None = None,
    timeout: float = PUSH_TIMEOUT,
) -> str:
    """Upload ``folder`` to the Hub as dataset ``repo_id`` (created if missing); returns the commit's URL.

    Without ``token``, ServiceError naming the upload command to run instead. ``endpoint`` defaults to
    ``HF_ENDPOINT`` or the Hub; each step of a request waits at most ``timeout`` seconds. Any failure of the Hub or
    the network is a :class:`HubError` naming the repository.
    """
    folder = Path(folder)
    if not (folder / CROISSANT).is_file():
        raise ServiceError(f"{folder} is not a dataset folder written by publish_dataset")
    check_repo_id(repo_id)
    if not token:
        raise ServiceError(
            "HF_TOKEN is not set, so nothing was uploaded. Set HF_TOKEN to a write token (in the environment or on "
            "the Connections page) and run again, "
            f"or upload the folder yourself: {upload_command(folder, repo_id, private)}"
        )
    from huggingface_hub import HfApi
    from huggingface_hub.errors import OfflineModeIsEnabled

    api = HfApi(endpoint=endpoint or os.environ.get("HF_ENDPOINT") or None, token=token)
    try:
        with _bounded_hub_client(timeout):
            api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
            commit = api.upload_folder(
                repo_id=repo_id,
                folder_path=str(folder),
                repo_type="dataset",
                commit_message="Publish the dataset folder (publish_dataset)",
                ignore_patterns=[MANIFEST],
            )
    except OfflineModeIsEnabled:
        raise ServiceError(
            "HF_HUB_OFFLINE is set, so nothing was uploaded. Unset it and run again, or upload the folder "
            f"yourself: {upload_command(folder, repo_id, private)}"
        ) from None
    except Exception as exc:
        raise HubError(f"upload of {folder} to the Hub dataset {repo_id} failed: {type(exc).__name__}: {exc}") from None
    return str(getattr(commit, "commit_url", commit))
