"""CHANGELOG.md and the method versions (core.methods) hold together, and a researcher sees once
what changed since the entry they last acknowledged (the home page's notice, dismissed per user)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from core import methods, selectors
from genderbias.stats import intervals

ROOT = Path(__file__).resolve().parents[2]


def test_every_method_version_after_the_first_has_its_changelog_entry_newest_first():
    entries = methods.changelog_entries((ROOT / "CHANGELOG.md").read_text())
    named = [pair for entry in entries for pair in entry.methods]
    for name, versions in methods.METHODS.items():
        for version in list(versions)[1:]:
            assert (name, version) in named, f"{name} {version}: no CHANGELOG.md entry names it"
        assert methods.CURRENT[name] in versions
    # The interval construction in use is the newest declared (genderbias.stats.intervals' one declaration).
    assert methods.CURRENT["label_interval"] == intervals.LABEL_INTERVAL
    assert all(
        (name, version) in [(n, v) for n in methods.METHODS for v in methods.METHODS[n]] for name, version in named
    )
    dates = [entry.date for entry in entries]
    assert all(re.fullmatch(r"\d{4}-\d{2}-\d{2}", d) for d in dates) and dates == sorted(dates, reverse=True)
    assert all("**Old figure:**" in entry.body and "**What moves:**" in entry.body for entry in entries)
    assert len({entry.heading for entry in entries}) == len(entries)


@pytest.mark.django_db
def test_the_home_page_lists_the_entries_newer_than_the_acknowledged_once(
    client, django_user_model, tmp_path, monkeypatch
):
    text = (ROOT / "CHANGELOG.md").read_text()
    count = len(methods.changelog_entries(text))
    researcher = django_user_model.objects.create_user("r", password="pw", is_staff=True)
    other = django_user_model.objects.create_user("o", password="pw", is_staff=True)
    client.force_login(researcher)

    def notice() -> list[str]:
        page = client.get("/").content.decode()
        if 'id="changelog-notice"' not in page:
            return []
        return re.findall(
            r"<li><strong>(.*?)</strong>", page.split('id="changelog-notice"', 1)[1].split("</section>")[0]
        )

    assert len(notice()) == count  # never acknowledged: every entry
    assert client.post("/changelog/acknowledge/").status_code == 302
    assert notice() == []
    # A later version's entry: only it is shown, to the one who acknowledged; the other still sees all.
    later = tmp_path / "CHANGELOG.md"
    head, _, rest = text.partition("\n## ")
    later.write_text(
        f"{head}\n## 2099-01-01 ties later: a test's change\n\n- **Methods:** `ties` `later`.\n\n## {rest}"
    )
    monkeypatch.setattr(selectors, "CHANGELOG", later)
    assert notice() == ["2099-01-01 ties later: a test&#x27;s change"]
    client.force_login(other)
    assert len(notice()) == count + 1
    client.post("/changelog/acknowledge/")
    assert notice() == []
    annotator = django_user_model.objects.create_user("a", password="pw")
    client.force_login(annotator)
    assert client.post("/changelog/acknowledge/").status_code in (302, 403)
    assert 'id="changelog-notice"' not in client.get("/").content.decode()
