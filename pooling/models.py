"""State of the pooling app: registered inputs, word lists and pools.

Large data stays in files (a collection is registered, never copied; a run is normalised once
into Parquet under ``settings.CACHE_DIR``); the database holds what people browse and what the
other apps point at.
"""

from __future__ import annotations

from django.db import models

from core.models import GroupOwned, GroupScopedManager
from core.options import TIES_OPTION
from genderbias.datasets import set_of_source
from genderbias.files.queryfiles import MAX_QID_CHARS


class _Named:
    """A model known by its ``name``, in pages, the admin and messages."""

    name: str

    def __str__(self) -> str:
        return self.name


class _FromSource:
    """What a collection's or query set's ``source`` says of where it came from."""

    source: str

    @property
    def dataset_source(self) -> str:
        """``ir_datasets:<id> (ir_datasets <version>)`` when imported by dataset id, ``named-set:<key>
        (<repository>, <licence>)`` when from a named set (:mod:`genderbias.datasets`), else ``""``."""
        return self.source if self.source.startswith(("ir_datasets:", "named-set:")) else ""

    @property
    def named_set(self):
        """The :class:`genderbias.datasets.NamedSet` it came from, or None."""
        return set_of_source(self.source)


class Collection(_Named, _FromSource, GroupOwned):
    """A passage collection: a file (``pid<TAB>passage`` lines, optionally gzipped), scanned whole
    when registered, or a collection by reference, whose texts are read by docid when needed."""

    class Kind(models.TextChoices):
        FILE = "file", "A pid<TAB>passage file, scanned whole"
        MSMARCO_V2 = "msmarco-v2", "MS MARCO v2 passage bundle files, read by docid"
        IR_DATASETS = "ir_datasets", "An ir_datasets docstore, read by docid"

    name = models.SlugField(max_length=100, unique=True)
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.FILE)
    path = models.CharField(
        max_length=1000, help_text="The file; the bundles' folder (msmarco-v2); the dataset id (ir_datasets)."
    )
    size = models.BigIntegerField(help_text="File size in bytes when registered (of every bundle, for msmarco-v2).")
    sha256 = models.CharField(
        max_length=64,
        help_text="Of the file's content; by reference: of the bundles' names, sizes and ends, or of the dataset id and version.",
    )
    passages = models.BigIntegerField(
        null=True, help_text="Number of passages (lines); empty when a collection by reference does not say."
    )
    docid_index = models.CharField(
        max_length=1000, blank=True, help_text="Parquet file listing every docid, in file order (a file's only)."
    )
    source = models.CharField(
        max_length=1000,
        blank=True,
        help_text="Where it came from when not a file of the user's (e.g. an ir_datasets id).",
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    @property
    def by_reference(self) -> bool:
        """Whether its texts are read by docid (never scanned whole)."""
        return self.kind != self.Kind.FILE


class QuerySet(_Named, _FromSource, GroupOwned):
    """A named set of queries: imported from a file, made by a pool, or exported by annotation."""

    class Origin(models.TextChoices):
        IMPORTED = "imported", "Imported file"
        POOL = "pool", "Pool"
        ANNOTATION = "annotation", "Annotation export"

    name = models.SlugField(max_length=100, unique=True)
    origin = models.CharField(max_length=20, choices=Origin.choices, default=Origin.IMPORTED)
    source = models.CharField(max_length=1000, blank=True, help_text="File path or object it was made from.")
    sha256 = models.CharField(max_length=64, blank=True)
    description = models.TextField(blank=True)
    licence = models.CharField(
        max_length=100, blank=True, help_text="The licence of a named set's queries (SPDX), else empty."
    )
    citation = models.TextField(blank=True, help_text="BibTeX of the work a named set comes from, else empty.")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]


class Query(models.Model):
    query_set = models.ForeignKey(QuerySet, on_delete=models.CASCADE, related_name="queries")
    qid = models.CharField(max_length=MAX_QID_CHARS)  # checked by the query file readers (genderbias.files.queryfiles)
    text = models.TextField()
    position = models.PositiveIntegerField(help_text="Order in the source file.")
    label = models.CharField(
        max_length=1,
        blank=True,
        default="",
        help_text="The gender label a labelled query file gave (a code of genderbias.labels), else empty.",
    )
    categories = models.CharField(
        max_length=500,
        blank=True,
        default="",
        help_text="A named set's categories of the query, '; ' between them (e.g. Grep-BiasIR's 'Career'), else empty.",
    )

    scope_via = "query_set"  # its research group is its query set's
    objects = GroupScopedManager()

    class Meta:
        ordering = ["query_set", "position"]
        constraints = [models.UniqueConstraint(fields=["query_set", "qid"], name="unique_qid_per_query_set")]

    def __str__(self) -> str:
        return f"{self.qid}: {self.text}"


class Run(_Named, GroupOwned):
    """A TREC run file of one ranker over one collection."""

    class Order(models.TextChoices):
        SCORE = "score", "By score, ties by docid descending (trec_eval)"
        FILE = "file", "As in the file"

    name = models.SlugField(max_length=100, unique=True)
    collection = models.ForeignKey(Collection, on_delete=models.PROTECT, related_name="runs")
    path = models.CharField(max_length=1000)
    sha256 = models.CharField(max_length=64)
    order = models.CharField(max_length=10, choices=Order.choices, default=Order.SCORE)
    queries = models.PositiveIntegerField()
    rows = models.BigIntegerField()
    reordered_ties = models.PositiveIntegerField(
        default=0, help_text="Queries whose file order differed from score order only because of tied scores."
    )
    score_ordered = models.BooleanField(
        default=False,
        help_text="The file's order is by score within each query (ties in any order): stored in the file's "
        "order, its tied documents still sit side by side. Unknown (false) for runs imported before.",
    )
    data = models.CharField(max_length=1000, help_text="Normalised Parquet file: qid, docid, rank, score.")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]


class Qrels(_Named, GroupOwned):
    """Relevance judgments (a TREC qrels file) of queries of a query set over a collection, normalised
    once into a Parquet file (``qid, docid, rel``) named by content, as runs are."""

    name = models.SlugField(max_length=100, unique=True)
    collection = models.ForeignKey(Collection, on_delete=models.PROTECT, related_name="qrels")
    query_set = models.ForeignKey(QuerySet, on_delete=models.PROTECT, related_name="qrels")
    path = models.CharField(max_length=1000)
    sha256 = models.CharField(max_length=64)
    judgments = models.PositiveIntegerField(help_text="Judged (query, document) pairs imported.")
    queries = models.PositiveIntegerField(help_text="Queries with at least one judgment.")
    relevant = models.PositiveIntegerField(help_text="Judgments with relevance above 0.")
    data = models.CharField(max_length=1000, help_text="Normalised Parquet file: qid, docid, rel.")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "qrels"


class WordList(_Named, models.Model):
    """A gender word list (``word,f|m``), registered by content so results name what they used."""

    name = models.CharField(max_length=200)
    sha256 = models.CharField(max_length=64, unique=True)
    words = models.JSONField(help_text="{word: 'f' | 'm'}")
    created = models.DateTimeField(auto_now_add=True)


class Pool(_Named, GroupOwned):
    """The union of the top ``depth`` queries of every run's female- and male-leaning list."""

    name = models.SlugField(max_length=100, unique=True)
    source = models.ForeignKey(QuerySet, on_delete=models.PROTECT, related_name="pools_from")
    queries = models.OneToOneField(
        QuerySet, on_delete=models.PROTECT, related_name="pool", help_text="The pooled queries as a query set."
    )
    runs = models.ManyToManyField(Run, related_name="pools")
    wordlist = models.ForeignKey(WordList, on_delete=models.PROTECT)
    rank_cutoff = models.PositiveIntegerField()
    depth = models.PositiveIntegerField()
    magnitude = models.CharField(max_length=10)
    tokenizer = models.CharField(max_length=20)
    ties = models.CharField(
        max_length=20,
        choices=TIES_OPTION.choices,
        default=TIES_OPTION.default,
        help_text="How the runs' tied documents were ordered for RaB, as on reports (core.options.TIES_OPTION); "
        "pools built before this choice: file (the run's stored order).",
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created"]


class PoolEntry(models.Model):
    """Provenance of one pooled query in one run: its RaB and where each list put it."""

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="entries")
    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="pool_entries")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="+")
    rank_bias = models.FloatField(null=True, help_text="RaB@cutoff; null when the run lacks the query.")
    tie_low = models.FloatField(
        null=True, help_text="Lowest RaB@cutoff over the orders of tied documents; null where no order moves it."
    )
    tie_high = models.FloatField(
        null=True, help_text="Highest RaB@cutoff over the orders of tied documents; null where no order moves it."
    )
    female_position = models.PositiveIntegerField(
        null=True, help_text="1-based position in the female list if selected."
    )
    male_position = models.PositiveIntegerField(null=True, help_text="1-based position in the male list if selected.")

    scope_via = "pool"  # its research group is its pool's
    objects = GroupScopedManager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["pool", "query", "run"], name="unique_pool_entry")]

    def __str__(self) -> str:
        return f"{self.pool_id}/{self.query_id}/{self.run_id}: {self.rank_bias}"


class ScanChunk(models.Model):
    """One part of a reading split over Celery workers (a collection scan, a run import, texts read by
    reference), ``key`` naming what is read. A worker marks its chunk done only after its result file
    is in place, so a lost worker's chunk stays pending and is read again by the next attempt; a chunk
    with bad input is ``failed`` with the message (the same content fails the same way: no retry).
    """

    class Status(models.TextChoices):
        PENDING = "pending"
        DONE = "done"
        FAILED = "failed"

    key = models.CharField(max_length=200)
    index = models.PositiveIntegerField()
    start = models.BigIntegerField()
    end = models.BigIntegerField()
    first_line = models.BigIntegerField(default=1, help_text="The file's number of the range's first line.")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    result = models.CharField(max_length=1000, blank=True, help_text="Parquet file of the chunk's result.")
    error = models.TextField(blank=True, help_text="Why a failed chunk failed.")
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["key", "index"], name="unique_scan_chunk")]
        ordering = ["key", "index"]

    def __str__(self) -> str:
        return f"{self.key} #{self.index} ({self.status})"
