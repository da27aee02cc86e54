"""Issue 82: the one reader of a typed DOI (``publishing.zenodo.metadata.parse_doi``, through ``related``).

Round six found ``paper --dataset`` taking a DOI with ``"}\\input{/etc/passwd}`` after it (it landed
JSON-escaped in .zenodo.json). A DOI is "10.", a registrant code of 4-9 digits, "/" and a suffix of
letters, digits and ``-._;()/:`` (Crossref's recommended pattern); an address is http(s) of RFC 3986's
characters. The accepted DOIs below are real ones (the references the bundle cites), written out here.
"""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from publishing.zenodo.metadata import parse_doi, related
from tests.metrics.conftest import report  # noqa: F401  (the fixture, by name)

HOSTILE = '10.5281/zenodo.1234"}\\input{/etc/passwd}'


@pytest.mark.parametrize(
    "typed",
    [HOSTILE, f"doi:{HOSTILE}", f"https://doi.org/{HOSTILE}", 'https://example.org/x"}\\input{/etc/passwd}'],
)
def test_a_doi_or_address_with_latex_after_it_is_refused(typed):
    with pytest.raises(ValueError, match="not a DOI") as refused:
        related(typed, "isSupplementedBy", "dataset")
    assert repr(typed.strip()) in str(refused.value)


@pytest.mark.parametrize(
    ("typed", "doi"),
    [
        ("10.5281/zenodo.1234", "10.5281/zenodo.1234"),
        ("doi:10.1007/978-3-031-56069-9_1", "10.1007/978-3-031-56069-9_1"),
        ("https://doi.org/10.48550/arXiv.1611.09268", "10.48550/arXiv.1611.09268"),
        (" https://dx.doi.org/10.1093/biomet/33.3.239 ", "10.1093/biomet/33.3.239"),
    ],
)
def test_real_dois_are_read_in_each_written_form(typed, doi):
    assert parse_doi(typed) == doi
    assert related(typed, "isSupplementTo", "publication-article") == {
        "identifier": doi,
        "relation": "isSupplementTo",
        "scheme": "doi",
        "resource_type": "publication-article",
    }


def test_an_address_is_kept_and_what_is_neither_is_refused():
    assert parse_doi("https://zenodo.org/records/1234") is None
    assert related("https://zenodo.org/records/1234?x=a%20b", "r", "dataset")["scheme"] == "url"
    for typed in ("nonsense", "10.12/too-short-a-registrant", "ftp://example.org/x", "10.5281/zenodo 1234"):
        with pytest.raises(ValueError, match="not a DOI"):
            related(typed, "r", "dataset")


@pytest.mark.django_db
def test_paper_dataset_with_latex_after_the_doi_is_refused_before_anything_is_written(report, tmp_path):  # noqa: F811
    out = tmp_path / "bundle"
    with pytest.raises(CommandError, match=r"--dataset: not a DOI: .*10\.NNNN/suffix"):
        call_command("paper", report.name, out=str(out), dataset=HOSTILE)
    assert list(tmp_path.iterdir()) == []
