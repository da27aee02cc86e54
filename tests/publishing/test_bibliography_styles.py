"""references.bib as the venues' own BibTeX styles read it (issue 54, item 4).

Every entry is run through ``bibtex`` with ACM's ``ACM-Reference-Format.bst`` (acmart) and
Springer's ``splncs04.bst`` (llncs), both from Debian's ``texlive-publishers``: neither may warn
(``volume`` with ``number = {Part V}`` made both warn). Every DOI is one checked to resolve, kept
in :data:`CHECKED_DOIS` with where it was checked; an entry without a DOI has a URL.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from publishing.bibliography import ENTRIES, bibtex

#: Each DOI of references.bib, and where it was seen resolving to the work (the publisher's or an
#: index's record read on 2026-11-25 with the ``search`` tool, or the DOI printed on the work itself).
CHECKED_DOIS = {
    "10.1007/978-3-031-56069-9_1": "unpaywall.org/10.1007%2F978-3-031-56069-9_1: Springer's chapter page (ECIR 2024)",
    "10.4135/9781071878781": "the 4th edition's Sage Research Methods record (methods.sagepub.com), which prints the DOI",
    "10.1145/3308560.3317595": "Mendeley's record of the WWW 2019 Companion paper, pp. 553-562, ACM",
    "10.48550/arXiv.1611.09268": "arXiv-issued DataCite DOI of arXiv:1611.09268",
    "10.48550/arXiv.2110.01052": "arXiv-issued DataCite DOI of arXiv:2110.01052",
    "10.48550/arXiv.2311.01453": "arXiv-issued DataCite DOI of arXiv:2311.01453",
    # Checked when the entries were written (issues 43-52) and not re-read here:
    "10.1007/978-3-540-78646-7_38": "Springer, ECIR 2008 (LNCS 4956)",
    "10.1145/3085504.3085526": "ACM, SSDBM 2017",
    "10.2307/2346806": "JSTOR DOI of Applied Statistics 28(1) (Wiley/RSS)",
    "10.1080/01621459.1927.10502953": "Taylor & Francis, JASA 22(158)",
    "10.2307/2331554": "JSTOR DOI of Biometrika 6(1)",
    "10.1214/aos/1176344552": "Project Euclid, Annals of Statistics 7(1)",
    "10.1093/biomet/33.3.239": "Oxford Academic, Biometrika 33(3)",
    "10.1007/978-3-030-99739-7_38": "Springer, ECIR 2022 (LNCS 13186)",
    "10.1177/001316446002000104": "SAGE, Educational and Psychological Measurement 20(1)",
    "10.1126/science.adi6000": "Science 382(6671)",
    "10.1145/3576840.3578295": "ACM, CHIIR '23 (the arXiv version 2201.07754v3 names CHIIR 2023)",
    "10.1145/3404835.3462949": "ACM, SIGIR 2021",
    "10.1145/3397271.3401280": "ACM, SIGIR 2020",
}

#: A warning kept on purpose, with why: CHIIR '23's page range was not found on any stored page,
#: and a guessed range would be a false statement in the paper.
ALLOWED = {"ACM-Reference-Format": {"Warning--page numbers missing in both pages and numpages fields in krieg2023grep"}}

STYLES = ("ACM-Reference-Format", "splncs04")
needs_bibtex = pytest.mark.skipif(
    shutil.which("bibtex") is None or shutil.which("kpsewhich") is None,
    reason="needs bibtex (texlive-binaries) and the styles of texlive-publishers",
)


def _field(entry: str, name: str) -> str | None:
    match = re.search(rf"^\s*{name}\s*=\s*\{{(.+)\}},?\s*$", entry, re.MULTILINE)
    return match.group(1) if match else None


def test_every_doi_is_one_checked_to_resolve_and_an_entry_without_one_has_a_url():
    dois = {key: _field(entry, "doi") for key, entry in ENTRIES.items()}
    unchecked = {key: doi for key, doi in dois.items() if doi and doi not in CHECKED_DOIS}
    assert unchecked == {}, "add each new DOI to CHECKED_DOIS once it is seen resolving"
    for key, doi in dois.items():
        assert doi or _field(ENTRIES[key], "url"), f"{key}: neither a DOI nor a URL"
    # Holm's JSTOR id (10.2307/4615733) does not resolve: the stable JSTOR address, no DOI.
    assert dois["holm1979"] is None and _field(ENTRIES["holm1979"], "url") == "https://www.jstor.org/stable/4615733"


def warnings(bib: str, style: str, folder: Path) -> list[str]:
    """The warnings ``bibtex`` prints for every entry of ``bib`` in ``style``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "references.bib").write_text(bib)
    (folder / "main.aux").write_text(f"\\relax\n\\citation{{*}}\n\\bibstyle{{{style}}}\n\\bibdata{{references}}\n")
    done = subprocess.run(["bibtex", "main"], cwd=folder, capture_output=True, text=True, timeout=60)
    assert done.returncode in (0, 1), done.stdout + done.stderr  # 1: warnings only; 2 and more: errors
    assert (folder / "main.bbl").stat().st_size > 0
    return [line for line in done.stdout.splitlines() if line.startswith("Warning--")]


@needs_bibtex
@pytest.mark.parametrize("style", STYLES)
def test_neither_venue_style_warns_on_any_entry(style, tmp_path):
    found = subprocess.run(["kpsewhich", f"{style}.bst"], capture_output=True, text=True).stdout.strip()
    if not found:
        pytest.skip(f"{style}.bst is not installed (apt-get install texlive-publishers)")
    assert set(warnings(bibtex(ENTRIES), style, tmp_path)) <= ALLOWED.get(style, set())


@needs_bibtex
def test_the_check_sees_the_warning_the_old_entry_gave(tmp_path):
    """The helper can fail: ``volume`` with ``number = {Part V}`` warns in both styles, as it did."""
    old = ENTRIES["abolghasemi2024"].replace(
        "  volume    = {14612},", "  volume    = {14612},\n  number    = {Part V},"
    )
    for style in STYLES:
        if subprocess.run(["kpsewhich", f"{style}.bst"], capture_output=True, text=True).stdout.strip():
            assert "Warning--can't use both volume and number fields in abolghasemi2024" in warnings(
                old + "\n", style, tmp_path / style
            )
