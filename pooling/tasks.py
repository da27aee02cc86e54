"""Celery tasks of the pooling app: thin shells over services, run as Jobs (:mod:`core.tasks`)."""

from __future__ import annotations

from django.urls import reverse

from core.models import Job
from core.tasks import job_task

from . import services
from .models import Pool, QuerySet, Run
from .wordlists import load_wordlist


@job_task
def build_pool_task(
    job: Job, name: str, query_set_id: int, run_ids: list[int], settings: dict, wordlist_path: str = ""
) -> str:
    # A redelivery after a crash may find the pool committed by the delivery that died.
    pool = Pool.objects.filter(name=name, created__gte=job.created).first() if job.redelivered else None
    if pool is None:
        runs = sorted(Run.objects.filter(pk__in=run_ids), key=lambda r: run_ids.index(r.pk))
        words = load_wordlist(wordlist_path) if wordlist_path else None
        pool = services.build_pool(
            name,
            QuerySet.objects.get(pk=query_set_id),
            runs,
            services.PoolSettings(**settings),
            words,
            job=job,
            bar=False,
        )
    job.result = {"pool": pool.name, "url": reverse("pooling:pool-detail", args=[pool.name])}
    job.message = f"Pooled {pool.queries.queries.count()} queries"
    return pool.name
