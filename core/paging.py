"""Server-side search and pages for the long tables of the site (pool queries, per-query
agreement, per-query CRBO), so a page never renders thousands of rows at once.

``?q=`` keeps the rows whose searched fields contain the text (case-insensitive); ``?page=``
picks the page (an out-of-range or malformed number shows the nearest page, as a person
following an old link expects).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.core.paginator import Page, Paginator
from django.http import HttpRequest
from django.utils.http import urlencode

#: Rows per page of a long table.
ROWS_PER_PAGE = 50


@dataclass
class TablePage:
    page: Page
    query: str
    total: int  # rows before the search

    @property
    def rows(self) -> list:
        return list(self.page.object_list)

    def link(self, number: int) -> str:
        """The query string of page ``number`` with the same search."""
        params = {"page": number} | ({"q": self.query} if self.query else {})
        return "?" + urlencode(params)

    @property
    def previous_link(self) -> str | None:
        return self.link(self.page.previous_page_number()) if self.page.has_previous() else None

    @property
    def next_link(self) -> str | None:
        return self.link(self.page.next_page_number()) if self.page.has_next() else None


def table_page(
    request: HttpRequest,
    rows: Sequence[Any],
    text_of: Callable[[Any], str],
    *,
    per_page: int | None = None,
) -> TablePage:
    """The page of ``rows`` the request asks for, searched by ``text_of(row)`` (``per_page``
    rows a page, by default :data:`ROWS_PER_PAGE`)."""
    query = request.GET.get("q", "").strip()[:200]
    found = [row for row in rows if query.casefold() in text_of(row).casefold()] if query else list(rows)
    paginator = Paginator(found, per_page or ROWS_PER_PAGE)
    return TablePage(paginator.get_page(request.GET.get("page")), query, len(rows))
