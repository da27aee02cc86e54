"""Services of the pooling app: everything that changes its state.

Views, serializers, management commands and Celery tasks call these functions for every
write; reads live in :mod:`pooling.selectors`. Heavy reading happens before any
transaction opens; the database writes of one import or pool happen in one transaction,
so bad input or an interruption leaves nothing half-written. Derived files (docid
indexes, normalised runs, count caches) are written atomically under
``settings.CACHE_DIR`` and named by content hash, so a retry or a second import of the
same file reuses them. Grouped by topic:

- :mod:`.imports` -- collections, query sets and word lists registered; the one entry
  point of the four imports (``import_file``) and its background job (``import_job``,
  started by ``start_import``);
- :mod:`.runs` -- runs read, checked and normalised into Parquet, whole or split over
  Celery workers (``parse_run_chunk`` is the body of one chunk's task);
- :mod:`.named` -- the field's data sets imported by name (:mod:`genderbias.datasets`), every
  part they have, through the imports above;
- :mod:`.qrels` -- relevance judgments (TREC qrels) read, checked and normalised into Parquet;
- :mod:`.counts` -- gender-word counts of passages, cached, or one scan split over
  workers (``count_scan_chunk`` is the body of one chunk's task);
- :mod:`.pools` -- pools built (read, computed by :mod:`genderbias.ranking.pool`, stored in one
  transaction), built as a background job (``pool_job``, ``start_pool``), written as query files;
  what a default pool of new runs reads counted ahead (``count_pool_passages``);
- :mod:`.common` -- what they share: ``ImportResult``, the byte progress of a pass over a
  file, the wait on a split job's chunk rows.

``run_frame``, ``top_rankings``, ``qrels_frame`` and ``wordlist_of`` are reads (:mod:`pooling.selectors`),
re-exported here because ``metrics`` imports them from here.
"""

from ..selectors import qrels_frame, run_frame, top_rankings, wordlist_of
from .common import ImportResult
from .counts import (
    count_scan_chunk,
    document_counts_chunked,
    document_counts_for,
    read_texts_chunk,
    read_texts_chunked,
    texts_by_reference,
    texts_checksum,
)
from .imports import (
    IMPORT_KINDS,
    check_bundle_folder,
    create_query_set,
    import_collection,
    import_dataset,
    import_file,
    import_job,
    import_queries,
    import_wordlist,
    register_collection_by_reference,
    register_wordlist,
    start_import,
)
from .named import (
    NamedSetImport,
    check_named_import,
    check_named_set,
    import_named_set,
    named_set_job,
    named_set_outcome,
    start_named_set,
    write_named_set_files,
)
from .pools import PoolSettings, build_pool, count_pool_passages, pool_job, start_pool, write_query_file
from .qrels import import_qrels
from .runs import import_run, known_docids, parse_run_chunk, read_run_chunked

__all__ = [
    "IMPORT_KINDS",
    "ImportResult",
    "NamedSetImport",
    "PoolSettings",
    "build_pool",
    "check_bundle_folder",
    "check_named_import",
    "check_named_set",
    "count_pool_passages",
    "count_scan_chunk",
    "create_query_set",
    "document_counts_chunked",
    "document_counts_for",
    "import_collection",
    "import_dataset",
    "import_file",
    "import_job",
    "import_named_set",
    "import_qrels",
    "import_queries",
    "import_run",
    "import_wordlist",
    "known_docids",
    "named_set_job",
    "named_set_outcome",
    "parse_run_chunk",
    "pool_job",
    "qrels_frame",
    "read_run_chunked",
    "read_texts_chunk",
    "read_texts_chunked",
    "register_collection_by_reference",
    "register_wordlist",
    "run_frame",
    "start_import",
    "start_named_set",
    "start_pool",
    "texts_by_reference",
    "texts_checksum",
    "top_rankings",
    "wordlist_of",
    "write_named_set_files",
    "write_query_file",
]
