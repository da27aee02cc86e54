"""core.services.names: every named object is a slug; the refusal names the kind of object and shows a usable name."""

import pytest

from core.errors import ServiceError
from core.services.names import validate_name


@pytest.mark.parametrize("name", ["msmarco-dev", "run_1", "A2", "-"])
def test_slugs_are_accepted_and_returned(name):
    assert validate_name(name, "run") == name


@pytest.mark.parametrize("name", ["", "two words", "a/b", "..", "run.trec", "q?x=1", "é"])
def test_other_names_are_refused_naming_what_and_how(name):
    with pytest.raises(ServiceError) as error:
        validate_name(name, "query set")
    assert str(error.value) == (
        f"query set name {name!r} is not usable: use letters, digits, hyphens and underscores (e.g. msmarco-dev)"
    )


@pytest.mark.parametrize(
    ("name", "safe"),
    [
        ("..gz", "gz"),
        ("...gz", "gz"),
        ("..", "upload"),
        (".", "upload"),
        ("", "upload"),
        ("../../etc/passwd", "passwd"),
        ("..\\..\\boot.ini", "boot.ini"),
        ("a/..", "upload"),
        ("my run (final).trec.gz", "my_run_final_.trec.gz"),
        ("x" * 200 + ".tsv.gz", "x" * 113 + ".tsv.gz"),
        ("é.tsv", "_.tsv"),
    ],
)
def test_upload_names_become_a_plain_file_name(name, safe, tmp_path):
    from core.services.uploads import safe_filename

    assert safe_filename(name) == safe
    path = tmp_path / safe_filename(name)
    path.write_text("x")  # a plain file inside the folder, never the folder itself or outside it
    assert path.parent == tmp_path and path.is_file()
