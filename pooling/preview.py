"""What the importer will make of a file, shown before importing it; and the bad lines it lists.

- :func:`preview_head`: a file's head (at most :data:`PREVIEW_BYTES`, gunzipped; never more read,
  whatever the file's size) parsed by the library's real readers: the first rows, the run format
  detected and every problem of those lines with its line number.
- :class:`BadLines` and :class:`LineProblems`: an import collects its file's bad lines (up to
  :data:`MAX_PROBLEMS`) and, unless the user asked to skip them, refuses the file listing them all.

Pure module (no Django).
"""

from __future__ import annotations

import tempfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from genderbias.errors import InputError, Skipped
from genderbias.files.qrelfiles import read_qrels
from genderbias.files.queryfiles import ROLES, ColumnChoiceError, first_table, read_query_table, with_columns
from genderbias.files.textfiles import GZIP_MAGIC, safe_basename
from genderbias.text.wordlists import load_wordlist

#: How much of a file a preview reads (uncompressed bytes; an upload's first bytes, sliced by the browser).
PREVIEW_BYTES = 256 * 1024
#: Rows a preview shows.
PREVIEW_ROWS = 10
#: Problems listed at most (a preview, a refused import).
MAX_PROBLEMS = 50


class BadLines(InputError):
    """A file refused for its bad lines, listed one a line (up to :data:`MAX_PROBLEMS`) so a person sees
    them all at once; ``total`` counts every bad line found."""

    def __init__(self, path: str | Path, errors: list[InputError], total: int, complete: bool = True) -> None:
        self.errors = sorted(errors, key=lambda e: (e.line is None, e.line or 0))
        self.total = total
        counted = f"{total} bad line{'s' if total != 1 else ''}" if complete else f"more than {len(errors)} bad lines"
        listed = f" (the first {len(self.errors)} listed)" if len(self.errors) < total or not complete else ""
        problem = (
            f"{counted}{listed}; nothing was imported (choose to skip bad lines to import the others):\n"
            + "\n".join(
                f"  line {e.line}: {e.problem}" if e.line is not None else f"  {e.problem}" for e in self.errors
            )
        )
        super().__init__(path, None, problem)

    def problems(self) -> list[dict]:
        """The listed problems as JSON values: ``{"line": 3, "problem": "…"}``."""
        return [{"line": e.line, "problem": e.problem} for e in self.errors]


@dataclass
class LineProblems(Skipped):
    """A readers' ``skipped`` collector that keeps at most ``cap`` errors and counts them all; unless
    ``skip``, it stops with :class:`BadLines` past ``cap``, and :meth:`refuse` raises it at the end."""

    path: str | Path = ""
    skip: bool = False
    cap: int = MAX_PROBLEMS
    total: int = 0

    def __len__(self) -> int:
        return self.total

    def add(self, error: InputError) -> None:
        self.total += 1
        if len(self.errors) < self.cap:
            self.errors.append(error)
        elif not self.skip:
            raise BadLines(self.path, self.errors, self.total, complete=False)

    def summary(self, limit: int = 5) -> str:
        shown = "\n".join(f"  {e}" for e in self.errors[:limit])
        more = f"\n  … and {self.total - limit} more" if self.total > limit else ""
        return f"skipped {self.total} bad line(s):\n{shown}{more}"

    @contextmanager
    def reading(self) -> Iterator[LineProblems]:
        """Around a reader given this collector: refuse the bad lines it found, also when the reader
        then stops on a whole-file problem."""
        try:
            yield self
        except BadLines:
            raise
        except InputError as exc:
            if self.total and not self.skip:
                raise BadLines(self.path, [*self.errors, exc], self.total) from None
            raise
        self.refuse()

    def refuse(self) -> None:
        """Raise :class:`BadLines` when lines were bad and not to be skipped (a single one as itself)."""
        if self.total and not self.skip:
            if self.total == 1:
                raise self.errors[0]
            raise BadLines(self.path, self.errors, self.total)


@dataclass
class Problem:
    line: int | None
    problem: str


@dataclass
class Preview:
    """What the importer makes of a file's first lines."""

    kind: str
    columns: list[str] = field(default_factory=list)
    rows: list[tuple] = field(default_factory=list)
    #: Lines looked at (the head's lines), and whether they are the whole file.
    lines: int = 0
    whole_file: bool = True
    problems: list[Problem] = field(default_factory=list)
    #: Problems found past :data:`MAX_PROBLEMS` (not listed).
    more_problems: int = 0
    #: Runs: the format detected (``trec`` or ``msmarco``).
    run_format: str | None = None
    #: Query files: the columns chosen (role -> header name or 1-based number), and the table read.
    chosen: dict = field(default_factory=dict)
    table: object = None

    def mapping(self) -> list[dict]:
        """Query files: each role (id, query, label) with the file's columns to choose from."""
        if self.table is None:
            return []
        return [
            {
                "role": role,
                "columns": [
                    {"value": i + 1, "name": name, "selected": self.table.columns.get(role) == i}
                    for i, name in enumerate(self.table.names)
                ],
                "none": role == "label" and "label" not in self.table.columns,
            }
            for role in ROLES
        ]

    def add_problems(self, errors: Iterable[InputError]) -> None:
        for error in errors:
            if len(self.problems) < MAX_PROBLEMS:
                self.problems.append(Problem(error.line, error.problem))
            else:
                self.more_problems += 1


def head_lines(first_bytes: bytes, complete: bool, limit: int = PREVIEW_BYTES) -> tuple[bytes, bool]:
    """``(lines, whole_file)``: the first whole lines within ``first_bytes`` (all of the file when
    ``complete``), gunzipped up to ``limit`` bytes (a truncated stream as far as it goes, a corrupt
    one an :class:`InputError`). A first line longer than ``limit`` gives no lines.
    """
    data = first_bytes
    if data[:2] == GZIP_MAGIC:
        unzip = zlib.decompressobj(wbits=31)
        try:
            data = unzip.decompress(data, limit + 1)
        except zlib.error as exc:
            raise InputError("", None, f"the gzip file is corrupt ({exc})") from None
        complete = complete and unzip.eof and len(data) <= limit
    elif len(data) > limit:
        complete = False
    data = data[: limit + 1]
    if complete:
        return data, True
    cut = data.rfind(b"\n", 0, limit) + 1
    return data[:cut], False


def read_head(path: str | Path, limit: int = PREVIEW_BYTES) -> tuple[bytes, bool]:
    """:func:`head_lines` of a file on disk (reads at most ``limit + 1`` of its bytes)."""
    with open(path, "rb") as file:
        first = file.read(limit + 1)
    return head_lines(first, len(first) <= limit, limit)


def preview_head(
    kind: str,
    lines: bytes,
    whole_file: bool,
    *,
    file_name: str = "file",
    known_docids: Callable[[list[str]], Iterable[str]] | None = None,
    rows: int = PREVIEW_ROWS,
    columns: dict | None = None,
) -> Preview:
    """Parse ``lines`` (:func:`head_lines`) as the ``kind`` import would, collecting every problem.

    ``known_docids``: for a run, which of the given docids its collection holds (else unchecked).
    The lines go to a temporary file named by the user's file's safe base name, so the real
    readers read them as any file.
    """
    preview = Preview(kind, lines=lines.count(b"\n") + (0 if lines.endswith(b"\n") or not lines else 1))
    preview.whole_file = whole_file
    preview.chosen = dict(columns or {})
    if not lines and not whole_file:
        preview.problems.append(Problem(1, f"no line ends within the first {PREVIEW_BYTES // 1024} KB"))
        return preview
    with tempfile.TemporaryDirectory(prefix="preview-") as folder:
        path = Path(folder) / (safe_basename(file_name, "file").removesuffix(".gz") or "file")
        path.write_bytes(lines)
        skipped = Skipped()
        try:
            _PARSERS[kind](preview, path, skipped, known_docids, rows, whole_file)
        except InputError as exc:  # a problem that stops the reader (bad UTF-8, a bad first run line …)
            skipped.add(exc)
        preview.add_problems(sorted(skipped.errors, key=lambda e: (e.line is None, e.line or 0)))
    return preview


def _collection(preview: Preview, path: Path, skipped: Skipped, known, rows: int, whole: bool) -> None:
    import polars as pl

    from genderbias.files import blocks, collection

    preview.columns = ["line", "docid", "text"]
    frames = [collection.parse_passages(path, lines, skipped) for lines, _ in blocks.iter_blocks(path)]
    passages = pl.concat(frames) if frames else pl.DataFrame()
    preview.rows = [(line, docid, _short(text)) for line, docid, text in passages.head(rows).iter_rows()]
    try:  # the checks over all the lines: repeated ids, no passages at all
        collection.scan_collection(path, skipped=Skipped())
    except InputError as exc:
        if whole or exc.line is not None:
            skipped.add(exc)


def _queries(preview: Preview, path: Path, skipped: Skipped, known, rows: int, whole: bool) -> None:
    preview.columns = ["qid", "query"]
    table = first_table(path)
    if table is not None:
        try:
            preview.table = with_columns(table, preview.chosen)
        except ColumnChoiceError as exc:
            preview.table = table
            skipped.add(InputError(path, None, f"{exc.path}: {exc.problem}"))
            return
    try:
        queries, preview.table = read_query_table(path, preview.chosen, skipped=skipped)
    except InputError as exc:
        if exc.line is not None or whole:  # "no queries" of a head cut short is not the file's
            skipped.add(exc)
        return
    if preview.table.labelled:
        preview.columns.append("label")
        preview.rows = [(qid, _short(text), label) for qid, text, label in queries[:rows]]
    else:
        preview.rows = [(qid, _short(text)) for qid, text, _ in queries[:rows]]


def _run(preview: Preview, path: Path, skipped: Skipped, known, rows: int, whole: bool) -> None:
    import polars as pl

    from genderbias.files.runs import check_run_file, finish_run, parse_run_lines

    preview.columns = ["line", "qid", "docid", "score"]
    path, preview.run_format = check_run_file(path, "score", "auto")
    known_docids = None
    if known is not None:
        docids = parse_run_lines(path, preview.run_format, skipped=Skipped())["docid"].unique().to_list()
        known_docids = pl.Series("docid", list(known(docids)), dtype=pl.String)
    fields = parse_run_lines(path, preview.run_format, known_docids, skipped)
    preview.rows = list(fields.head(rows).iter_rows())
    try:  # repeated (query, docid) pairs; an empty run
        finish_run(path, fields, "score", skipped, preview.run_format)
    except InputError as exc:
        skipped.add(exc)


def _wordlist(preview: Preview, path: Path, skipped: Skipped, known, rows: int, whole: bool) -> None:
    preview.columns = ["word", "gender"]
    words = load_wordlist(path)  # no skipping: its first problem is the one listed
    preview.rows = list(words.words.items())[:rows]


def _qrels(preview: Preview, path: Path, skipped: Skipped, known, rows: int, whole: bool) -> None:
    preview.columns = ["qid", "docid", "rel"]
    try:
        frame = read_qrels(path, skipped=skipped)
    except InputError as exc:
        if exc.line is not None or whole:
            skipped.add(exc)
        return
    preview.rows = list(frame.head(rows).iter_rows())


def _short(text: str, length: int = 160) -> str:
    return text if len(text) <= length else text[: length - 1] + "…"


_PARSERS = {"collection": _collection, "queries": _queries, "run": _run, "wordlist": _wordlist, "qrels": _qrels}


def docids_in_index(index_path: str | Path, docids: list[str]) -> list[str]:
    """Which of ``docids`` a collection's docid index holds: a filtered scan, never the whole index."""
    import polars as pl

    if not docids:
        return []
    found = pl.scan_parquet(index_path).select("docid").filter(pl.col("docid").is_in(docids)).collect()
    return found["docid"].cast(pl.String).to_list()
