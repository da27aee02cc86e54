"""A query's text beside its id wherever a page shows an id (issue 45): escaped, cut at 80
characters with the whole text in its title (``core/_query_text.html``)."""

from __future__ import annotations

import html
import re

import pytest
from django.template.loader import render_to_string
from django.urls import reverse

from annotation.quality.services.escalation import escalate_batch
from tests.annotation.conftest import QUERIES, disputed_batch

TEXTS = {qid: text for qid, text, _ in QUERIES}


def test_the_text_is_escaped_and_cut_with_the_whole_text_in_its_title():
    text = "<b>who</b> is " + "very " * 30 + "tall"
    shown = render_to_string("core/_query_text.html", {"text": text})
    assert "<b>" not in shown and "&lt;b&gt;who&lt;/b&gt;" in shown
    visible = html.unescape(re.search(r">(.*)</span>", shown).group(1))
    assert len(visible) == 80 and visible.endswith("…") and text.startswith(visible[:-1])
    assert f'title="{html.escape(text, quote=True)}"' in shown


@pytest.mark.django_db
def test_the_batch_page_shows_each_escalated_query_with_its_text(query_set, annotators, researcher, client):
    batch = disputed_batch(query_set, annotators, "esc")
    escalations = escalate_batch(batch)
    disputed = [qid for e in escalations for qid in e.disputed]
    assert disputed  # five of the six queries are disputed
    client.force_login(researcher)
    page = client.get(reverse("annotation:batch-detail", args=[batch.name])).content.decode()
    for qid in disputed:
        assert f'<code>{qid}</code><span class="query-text" title="{TEXTS[qid]}">{TEXTS[qid]}</span>' in page


@pytest.mark.django_db
def test_the_agreement_page_shows_each_disagreement_with_its_text(query_set, annotators, researcher, client):
    batch = disputed_batch(query_set, annotators, "dis")
    client.force_login(researcher)
    page = client.get(reverse("annotation:batch-agreement", args=[batch.name])).content.decode()
    table = page.split('id="method-disagreements"')[1].split("</table>")[0]
    shown = re.findall(r">([0-9]+)</a><span class=\"query-text\" title=\"([^\"]*)\">", table)
    assert shown and all(TEXTS[qid] == text for qid, text in shown)
    assert len(shown) == table.count("</a>")  # no id without its text
