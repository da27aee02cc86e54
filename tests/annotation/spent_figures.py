"""Where a person reads what a batch spent: every page, the dataset card and the methods text, as text
(tests/annotation/crowd/test_spent.py and each platform's spend test compare them with what it charged)."""

from __future__ import annotations

import re

from django.urls import reverse

from annotation.exports.services import export_queries
from annotation.models import Batch
from publishing.methods_text import methods_tex
from publishing.services.records import batch_facts
from tests.publishing.test_paper_methods import SETTINGS


def shown(client, batch: Batch, tmp_path) -> dict[str, str]:
    """The batch's spend figure from every place it appears, as text."""
    dashboard = client.get("/").content.decode()
    listing = client.get(reverse("annotation:batch-list")).content.decode()
    page = client.get(reverse("annotation:batch-detail", args=[batch.name])).content.decode()
    live = client.get(reverse("annotation:batch-live", args=[batch.name])).content.decode()
    export_queries(batch, "all", tmp_path / f"{batch.name}.tsv")
    card = (tmp_path / f"{batch.name}.tsv.md").read_text()
    methods = methods_tex(batch_facts(batch), SETTINGS)
    row = re.search(rf">{batch.name}</a></td>.*?<td class=\"num spent\">\$([0-9.]+)</td>", dashboard, re.S)
    return {
        "dashboard": row.group(1),
        "batch list": re.search(rf'id="spent-{batch.name}">\(\$([0-9.]+) spent\)', listing).group(1),
        "batch page": re.search(r'<div class="value" id="spent">\$([0-9.]+)</div>', page).group(1),
        "live part": re.search(r'<div class="value" id="spent">\$([0-9.]+)</div>', live).group(1),
        "dataset card": re.search(r"\| spent \(fees and bonuses included\) \| ([0-9.]+) \|", card).group(1),
        "methods text": re.search(r"; ([0-9.]+) USD spent in all", methods).group(1),
    }
