"""Server-side search and pages for the site's long tables, so a page never renders thousands of
rows: ``?q=`` searches (any case), ``?sort=column`` (``-column`` descending) orders the whole list
before it is cut, ``?page=`` picks the page (a bad number shows the nearest). Links keep the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
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
    sort: str = ""  #: the order asked for and applied ("column" or "-column"; "" the rows' own)
    sortable: tuple[str, ...] = ()  #: the columns the view offers to sort by

    @property
    def rows(self) -> list:
        return list(self.page.object_list)

    def _params(self, page: int | None = None, **changes: Any) -> str:
        params = {"page": page, "q": self.query, "sort": self.sort} | changes
        return "?" + urlencode({key: value for key, value in params.items() if value not in ("", None)})

    def link(self, number: int) -> str:
        """The query string of page ``number`` with the same search and order."""
        return self._params(number)

    @property
    def sort_links(self) -> dict[str, dict[str, str]]:
        """Per sortable column: ``url`` (ascending, or descending when already ascending; first page,
        same search) and ``aria`` (its ``aria-sort``: ascending, descending or none)."""
        links = {}
        for column in self.sortable:
            state = "ascending" if self.sort == column else "descending" if self.sort == f"-{column}" else "none"
            order = f"-{column}" if state == "ascending" else column
            links[column] = {"url": self._params(sort=order), "aria": state}
        return links

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
    sort_keys: Mapping[str, Callable[[Any], Any]] | None = None,
) -> TablePage:
    """The page of ``rows`` the request asks for, searched by ``text_of(row)`` and ordered by
    ``sort_keys[column](row)`` (stable; an unknown column leaves the rows' order)."""
    query = request.GET.get("q", "").strip()[:200]
    found = [row for row in rows if query.casefold() in text_of(row).casefold()] if query else list(rows)
    sort_keys = sort_keys or {}
    sort = request.GET.get("sort", "").strip()
    if sort.lstrip("-") in sort_keys:
        found.sort(key=sort_keys[sort.lstrip("-")], reverse=sort.startswith("-"))
    else:
        sort = ""
    paginator = Paginator(found, per_page or ROWS_PER_PAGE)
    return TablePage(paginator.get_page(request.GET.get("page")), query, len(rows), sort, tuple(sort_keys))
