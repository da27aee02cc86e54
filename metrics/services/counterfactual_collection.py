"""The counterfactual collection as a service: a collection with every gendered word and first name swapped
(pure: :mod:`genderbias.ranking.counterfactual`), registered for the ranker's second run, what CRBO compares against.
"""

from __future__ import annotations

from pathlib import Path

from django.urls import reverse

from core.errors import ServiceError
from core.jobs import background_job
from core.models import Job
from core.progress import Progress
from core.services.names import validate_name
from core.services.storage import cache_dir
from genderbias.ranking.counterfactual import Swapper, swap_table, write_counterfactual
from metrics.services.reports import default_representative_wordlist
from pooling.models import Collection, WordList
from pooling.services import import_collection, wordlist_of


def write_counterfactual_collection(
    collection: Collection,
    name: str,
    *,
    wordlist: WordList | None = None,
    her: str = "his",
    job: Job | None = None,
) -> Collection:
    """Write the counterfactual of ``collection`` into the cache folder and register it as collection ``name``;
    the file is written whole before it is registered, so a failure leaves neither file nor collection."""
    validate_name(name, "collection")
    if Collection.objects.filter(name=name).exists():
        raise ServiceError(f"a collection named {name!r} exists; choose another name")
    if collection.by_reference:
        raise ServiceError(
            f"collection {collection.name!r} is registered by reference: a counterfactual is written from a "
            "pid<TAB>passage file, read whole"
        )
    words = wordlist_of(wordlist) if wordlist is not None else default_representative_wordlist()
    swapper = Swapper(swap_table(words.words.items(), her=her))
    destination = cache_dir("counterfactual") / f"{name}.tsv.gz"
    source = Path(collection.path)
    with Progress(total=source.stat().st_size, description=f"Swapping {collection.name}", job=job, bar=False) as bar:
        write_counterfactual(source, destination, swapper, progress=bar.update_to)
    return import_collection(destination, name, job=job, bar=False).obj


@background_job("genderbias.ranking.counterfactual", task="metrics.tasks.counterfactual_collection_task")
def counterfactual_job(job: Job, collection_id: int, name: str, wordlist_id: int | None, her: str) -> None:
    """Write and register a counterfactual collection; a redelivery finds one an earlier delivery registered."""
    collection = Collection.objects.filter(name=name, created__gte=job.created).first() if job.redelivered else None
    if collection is None:
        wordlist = WordList.objects.get(pk=wordlist_id) if wordlist_id else None
        collection = write_counterfactual_collection(
            Collection.objects.get(pk=collection_id), name, wordlist=wordlist, her=her, job=job
        )
    job.result = {"collection": collection.name, "passages": collection.passages, "url": reverse("metrics:crbo")}
    job.message = (
        f"Counterfactual collection {collection.name} ({collection.passages} passages) registered: "
        "run the ranker on it, import that run, then measure CRBO"
    )


def start_counterfactual_collection(
    collection: Collection, name: str, *, wordlist: WordList | None = None, her: str = "his"
) -> Job:
    """Write and register the counterfactual collection in the background; returns its Job."""
    description = f"Counterfactual of {collection.name} as {name}"
    wordlist_id = wordlist.pk if wordlist is not None else None
    return counterfactual_job.start(description, collection.pk, name, wordlist_id, her, of=collection)
