"""Celery tasks of the pooling app: thin shells over services, reporting through a Job."""

from __future__ import annotations

from celery import shared_task
from core.models import Job
from django.urls import reverse

from core.jobs import job_status

from . import services
from .models import QuerySet, Run
from .wordlists import load_wordlist


@shared_task
def build_pool_task(
    job_id: int, name: str, query_set_id: int, run_ids: list[int], settings: dict, wordlist_path: str = ""
) -> str:
    job = Job.objects.get(pk=job_id)
    with job_status(job):
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
