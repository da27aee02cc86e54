"""A license link reaches the card's YAML and Markdown unchanged, so it is checked for that (issue 44.5):
an http(s) URL of plain URL characters, or a file name of the folder; ``<img ... onerror>`` passed the
old check (anything but white space and ``"`` after ``http://``) and was written raw into the card."""

import pytest

from publishing.hub_card import check_license_terms


@pytest.mark.parametrize(
    "link",
    [
        "https://example.org/<img/src=x/onerror=alert(1)>",
        "https://example.org/terms'><script>alert(1)</script>",
        "https://example.org/`code`",
        "https://example.org/a\\b",
        "https://example.org/{x}",
        "https://example.org/terms\n# injected heading",
        "https://<img>",
        "javascript:alert(1)",
        "ftp://example.org/terms",
        "http://",
        "https://example.org/" + "a" * 2000,
    ],
)
def test_a_link_that_is_not_a_plain_url_or_file_name_is_refused(link):
    with pytest.raises(ValueError, match=r"--license-link .*an http\(s\) URL or a file name"):
        check_license_terms("other", "study-terms", link)


@pytest.mark.parametrize(
    "link",
    [
        "https://example.org/terms",
        "http://example.org:8080/a/b?x=1&y=%20#part",
        "https://ex.org/t_(v2).html",
        "LICENSE",
    ],
)
def test_plain_urls_and_file_names_are_kept_as_given(link):
    assert check_license_terms("other", "study-terms", link) == {"license_name": "study-terms", "license_link": link}
