"""Worker pseudonyms, the only name a worker has outside ``WorkerIdentity``: a keyed HMAC, stable across
batches but not recomputable without ``settings.WORKER_PSEUDONYM_KEY`` (ids are guessable: a hash is not)."""

from __future__ import annotations

import hashlib
import hmac

from django.conf import settings
from django.db import IntegrityError, transaction

from annotation.models import Worker, WorkerIdentity


def pseudonym(provider: str, external_id: str, key: str | None = None) -> str:
    """``w-`` and 16 hex digits of HMAC-SHA256(key, "provider:external_id")."""
    secret = (key if key is not None else settings.WORKER_PSEUDONYM_KEY).encode()
    digest = hmac.new(secret, f"{provider}:{external_id}".encode(), hashlib.sha256).hexdigest()
    return f"w-{digest[:16]}"


def worker_for(provider: str, external_id: str, user=None) -> Worker:
    """The worker with this provider id, created (with its restricted identity) on first sight."""
    worker = Worker.objects.filter(identity__provider=provider, identity__external_id=external_id).first()
    if worker is not None:
        return worker
    try:
        with transaction.atomic():
            identity = WorkerIdentity.objects.create(provider=provider, external_id=external_id, user=user)
            return Worker.objects.create(
                pseudonym=pseudonym(provider, external_id), provider=provider, identity=identity
            )
    except IntegrityError:
        # Another request created the same worker between our read and our write.
        return Worker.objects.get(identity__provider=provider, identity__external_id=external_id)
