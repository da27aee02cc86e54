"""Services of the pooling app: everything that changes its state; reads live in :mod:`pooling.selectors`.

Heavy reading happens before any transaction opens, and one import or pool writes in one
transaction, so bad input or an interruption leaves nothing half-written. Derived files are
written atomically under ``settings.CACHE_DIR``, named by content, so a retry reuses them.
Grouped by topic: :mod:`.imports` (collections, query sets, word lists, datasets; ``import_file``
and its job), :mod:`.runs`, :mod:`.qrels`, :mod:`.named` (the field's data sets by name),
:mod:`.counts` (gender-word counts, cached or split over workers), :mod:`.pools` and
:mod:`.common`. The reads ``run_frame``, ``top_rankings``, ``qrels_frame`` and ``wordlist_of`` are
re-exported because ``metrics`` imports them from here.
"""

from ..selectors import qrels_frame, run_frame, top_rankings, wordlist_of
from .counts import (
    count_scan_chunk,
    document_counts_chunked,
    document_counts_for,
    read_texts_chunk,
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
    register_collection_by_reference,
    register_wordlist,
    start_import,
)
from .named import (
    check_named_import,
    import_named_set,
    named_set_job,
    start_named_set,
    write_named_set_files,
)
from .pools import PoolSettings, build_pool, count_pool_passages, start_pool, write_query_file
from .qrels import import_qrels
from .runs import import_run, known_docids, parse_run_chunk

__all__ = [
    "IMPORT_KINDS", "PoolSettings", "build_pool", "check_bundle_folder", "check_named_import", "count_pool_passages",
    "count_scan_chunk", "create_query_set", "document_counts_chunked", "document_counts_for", "import_collection",
    "import_dataset", "import_file", "import_job", "import_named_set", "import_qrels", "import_queries", "import_run",
    "known_docids", "named_set_job", "parse_run_chunk", "qrels_frame", "read_texts_chunk",
    "register_collection_by_reference", "register_wordlist", "run_frame", "start_import", "start_named_set",
    "start_pool", "texts_by_reference", "texts_checksum", "top_rankings", "wordlist_of", "write_named_set_files",
    "write_query_file",
]  # fmt: skip
