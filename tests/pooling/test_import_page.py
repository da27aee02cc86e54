"""The Import page lists what was imported by the commands as well as from the site, and every set of qrels."""

import re

import pytest
from django.core.management import call_command
from django.urls import reverse


def table(page: str, table_id: str) -> list[list[str]]:
    body = re.search(rf'<table id="{table_id}">.*?<tbody>(.*?)</tbody>', page, re.S).group(1)
    return [re.findall(r"<td[^>]*>(.*?)</td>", row, re.S) for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)]


@pytest.mark.django_db
def test_command_line_imports_and_qrels_are_listed_on_the_import_page(world, tmp_path, client, django_user_model):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("1 0 d1 2\n1 0 d3 0\n2 0 d4 1\n")
    call_command("import_qrels", str(qrels), name="judged", queries="q", collection="tiny", verbosity=0)
    client.force_login(django_user_model.objects.create_user("res", password="pw-secret-123", is_staff=True))
    page = client.get(reverse("pooling:import")).content.decode()
    recent = table(page, "recent-imports")
    assert [(kind, name) for kind, name, *_ in recent] == [
        ("qrels", "judged"),
        ("run", "b"),
        ("run", "a"),
        ("query set", "q"),
        ("collection", "tiny"),
    ]
    assert recent[0][2] == "3 judgments of 2 queries of q"
    assert table(page, "qrels") == [["judged", "tiny", "q", "3", "2", "2", recent[0][3]]]
    assert str(tmp_path) not in page  # names and counts, never a path on the server
    assert "No import jobs yet." in page  # none was started from the site
