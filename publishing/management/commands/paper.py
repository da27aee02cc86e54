from core.management.cli import ProjectCommand, command_errors, get_named
from metrics.models import Report
from publishing.latex import DEFAULT_TEMPLATE, TEMPLATES
from publishing.services.paper import paper_warnings, write_paper_bundle


class Command(ProjectCommand):
    help = (
        "Write a report's paper bundle to a folder: its papers' tables as LaTeX (booktabs, significance "
        "marks and footnotes), its figures as vector PDF, methods.tex written from the study's facts, "
        "references.bib of every work cited, and main.tex that compiles as it is (README.txt says how "
        "to use them in a paper)."
    )

    def add_arguments(self, parser):
        parser.add_argument("report", help="the report's name")
        parser.add_argument(
            "--out",
            required=True,
            help="folder to write (its parent must exist; an earlier bundle there, marked by .paper-bundle, is replaced; any other files are refused)",
        )
        parser.add_argument(
            "--template",
            choices=list(TEMPLATES),
            default=DEFAULT_TEMPLATE,
            help="the class main.tex is set in and the page every table and figure is laid out for: acm (acmart "
            "sigconf, two columns), lncs (llncs, one column) or article (LaTeX's own; default). acm and lncs need "
            "Debian's texlive-publishers, texlive-latex-extra and texlive-plain-generic; all need cm-super",
        )
        parser.add_argument(
            "--title",
            help="the paper's title in main.tex (default: what was measured on what, from the study's facts)",
        )
        parser.add_argument(
            "--dataset",
            metavar="DOI_OR_URL",
            help="the dataset the paper goes with (its Zenodo DOI or address): a related identifier in .zenodo.json",
        )

    def handle(self, report, out, template, title, dataset, **options):
        report = get_named(Report.objects.all(), report, "report")
        with command_errors():
            folder = write_paper_bundle(report, out, title=title, dataset=dataset, template=template)
        names = sorted(path.name for path in folder.iterdir())
        self.stdout.write(self.style.SUCCESS(f"Paper bundle of {report.name} in {folder}: {', '.join(names)}"))
        for warning in paper_warnings(report):
            self.stderr.write(self.style.WARNING(f"Warning: {warning}"))
        self.stdout.write(f"Compile it: cd {folder} && pdflatex main && bibtex main && pdflatex main && pdflatex main")
        self.stdout.write(
            f"To deposit it on Zenodo: fill in the creators in {folder / '.zenodo.json'}, then "
            f"manage.py zenodo_deposit {folder}"
        )
