"""Forms of the pooling pages."""

from django import forms

from core.errors import ServiceError
from core.forms import CountField, add_service_error
from core.models import Job
from core.options import TIES_OPTION
from core.services.uploads import check_import_path, keep_upload, upload_too_large_message
from genderbias.datasets import NAMED_SETS
from genderbias.text.tokenize import DEFAULT_TOKENIZER, TOKENIZERS
from pooling.models import Pool

from . import services
from .analysis import MAGNITUDES
from .irdatasets import check_dataset_id
from .models import Collection, QuerySet, Run, WordList


class PoolForm(forms.Form):
    name = forms.SlugField(max_length=100, help_text="Name of the pool and of its query set.")
    queries = forms.ModelChoiceField(QuerySet.objects.all(), to_field_name="name", label="Query set")
    runs = forms.ModelMultipleChoiceField(Run.objects.all(), to_field_name="name", widget=forms.CheckboxSelectMultiple)
    rank_cutoff = CountField(min_value=1, initial=10, label="Rank cutoff (t of RaB@t)")
    depth = CountField(min_value=1, initial=500, help_text="Queries taken from the top of each list.")
    magnitude = forms.ChoiceField(choices=[(m, m) for m in MAGNITUDES], initial="tf")
    tokenizer = forms.ChoiceField(choices=[(t, t) for t in TOKENIZERS], initial=DEFAULT_TOKENIZER)
    # The reports' declaration of the order of ties (core.options): its choices, default, label and help.
    ties = forms.ChoiceField(
        choices=TIES_OPTION.choices,
        initial=TIES_OPTION.default,
        required=False,
        label=TIES_OPTION.label,
        help_text=TIES_OPTION.describe()[:1].upper() + TIES_OPTION.describe()[1:] + ".",
    )
    wordlist = forms.ModelChoiceField(
        WordList.objects.order_by("name"),
        required=False,
        label="Word list",
        empty_label="built-in: the 32 + 32 words of SIGIR 2020",
    )

    def clean_name(self):
        name = self.cleaned_data["name"]
        if Pool.objects.filter(name=name).exists() or QuerySet.objects.filter(name=name).exists():
            raise forms.ValidationError("a pool or query set with this name exists")
        return name

    def start(self) -> Job:
        """Build the pool as a background job (page and API alike)."""
        data = self.cleaned_data
        pool_settings = services.PoolSettings(
            data["rank_cutoff"],
            data["depth"],
            data["magnitude"],
            data["tokenizer"],
            data["ties"] or TIES_OPTION.default,
        )
        return services.start_pool(
            data["name"], data["queries"], list(data["runs"]), pool_settings, wordlist=data["wordlist"]
        )


#: A query file's column choices: the form's fields (the preview's selects post them too).
COLUMN_FIELDS = {"qid": "qid_column", "query": "query_column", "label": "label_column"}
#: What the form offers to do with a labelled query set's labels (the job's result leads there).
LABELS_AS = [
    ("", "keep them with the query set"),
    ("gold", "gold questions for a new batch"),
    ("test", "a labelled test set for a pre-labeller"),
]


def _checked(form: forms.Form, field: str, check, value):
    """``check(value, field)``, or ``value`` with the refusal shown under ``field`` (its ``field: `` dropped)."""
    try:
        return check(value, field)
    except ServiceError as exc:
        form.add_error(field, str(exc).removeprefix(f"{field}: "))
        return value


def chosen_columns(data) -> dict[str, str]:
    """The columns chosen in ``data`` (a form's or the preview's POST): role -> header name or number."""
    return {role: str(data.get(name, "")).strip() for role, name in COLUMN_FIELDS.items() if data.get(name)}


class ImportForm(forms.Form):
    """Import one file, uploaded or registered by its path inside ``IMPORT_ROOTS`` (pages and API alike)."""

    name = forms.SlugField(max_length=100, help_text="Letters, digits, hyphens and underscores (e.g. msmarco-dev).")
    file = forms.FileField(required=False, help_text="Upload a file (.gz accepted).")
    path = forms.CharField(
        required=False, max_length=1000, help_text="Or the absolute path of a file on the server, for large files."
    )
    collection = forms.ModelChoiceField(
        Collection.objects.all(), to_field_name="name", required=False, help_text="The collection the run ranks."
    )
    queries = forms.ModelChoiceField(
        QuerySet.objects.all(),
        to_field_name="name",
        required=False,
        label="Query set",
        help_text="The query set the judgments are about.",
    )
    order = forms.ChoiceField(choices=Run.Order.choices, initial=Run.Order.SCORE, required=False)
    dataset = forms.CharField(
        max_length=200,
        required=False,
        label="Dataset id",
        help_text="An ir_datasets id, such as msmarco-passage/dev/small (https://ir-datasets.com).",
    )
    skip_bad_lines = forms.BooleanField(required=False, help_text="Skip malformed lines and report them.")
    by_reference = forms.BooleanField(
        required=False,
        label="By reference",
        help_text="Read passages by id as pools and reports need them, never the whole collection: "
        "the path is a folder of MS MARCO v2 passage bundles (msmarco_passage_00 … _69).",
    )
    qid_column = forms.CharField(
        required=False, max_length=200, label="Query id column", help_text="A header name or a number (1 = first)."
    )
    query_column = forms.CharField(required=False, max_length=200, label="Query column")
    label_column = forms.CharField(
        required=False, max_length=200, label="Label column", help_text="none: the file's labels are not kept."
    )
    labels_as = forms.ChoiceField(
        choices=LABELS_AS,
        required=False,
        label="Use the labels as",
        help_text="A labelled file (qid,query,label): its labels stay with the query set either way.",
    )

    def __init__(self, kind: str, *args, too_large: str | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.kind = kind
        self.too_large = too_large
        if kind != "run":
            del self.fields["order"]
        if kind not in ("run", "qrels"):
            del self.fields["collection"]
        if kind != "qrels":
            del self.fields["queries"]
        else:
            self.fields["collection"].help_text = "The collection the judged documents are in."
            self.fields["file"].help_text = "Upload a TREC qrels file: 'qid 0 docid relevance' lines (.gz accepted)."
        if kind != "queries":
            for name in (*COLUMN_FIELDS.values(), "labels_as"):
                del self.fields[name]
        else:  # the columns are chosen in the preview (guessed from the header): hidden here
            for name in COLUMN_FIELDS.values():
                self.fields[name].widget = forms.HiddenInput()
            self.fields[
                "file"
            ].help_text = (
                "qid<TAB>query lines, or a CSV or TSV with a header (qid,query,label: the study's), .gz accepted."
            )
        if kind == "dataset":
            self.fields[
                "by_reference"
            ].help_text = "Do not write the documents out: read them through the dataset's docstore, by id, as needed."
        elif kind != "collection":
            del self.fields["by_reference"]
        if kind == "dataset":
            del self.fields["file"], self.fields["path"]
            self.fields["name"].help_text = "Name of the collection, query set and qrels made from it."
        else:
            del self.fields["dataset"]
        if kind == "wordlist":
            del self.fields["skip_bad_lines"]
            self.fields["file"].help_text = "Upload a word,f|m file (one word a line; .gz accepted)."

    def clean(self):
        data = super().clean()
        if self.too_large:
            self.add_error(self.too_large if self.too_large in self.fields else "file", upload_too_large_message())
            return data
        if self.kind == "dataset":
            data["dataset"] = _checked(
                self, "dataset", lambda value, _: check_dataset_id(value), data.get("dataset") or ""
            )
            return data
        if self.kind == "collection" and data.get("by_reference"):
            if data.get("file"):
                self.add_error(
                    "file", "a collection by reference is a folder on the server: give its path, not an upload"
                )
            elif not data.get("path"):
                self.add_error("path", "give the folder of the MS MARCO v2 passage bundles")
            else:
                data["path"] = _checked(self, "path", services.check_bundle_folder, data["path"])
            return data
        if data.get("file") and data.get("path"):
            self.add_error("path", "give a file or a path on the server, not both")
        elif not data.get("file") and not data.get("path"):
            self.add_error("file", "upload a file or give a path on the server")
        elif data.get("path"):
            data["path"] = _checked(self, "path", check_import_path, data["path"])
        if self.kind == "run" and not data.get("collection") and "collection" not in self.errors:
            self.add_error("collection", "choose the collection the run ranks")
        if self.kind == "qrels":
            if not data.get("collection") and "collection" not in self.errors:
                self.add_error("collection", "choose the collection the judged documents are in")
            if not data.get("queries") and "queries" not in self.errors:
                self.add_error("queries", "choose the query set the judgments are about")
        return data

    def start(self) -> Job:
        """Start the import as a background job (an upload is kept for as long as the import needs it)."""
        data = self.cleaned_data
        options = {"skip_bad_lines": data.get("skip_bad_lines", False), "by_reference": data.get("by_reference", False)}
        if self.kind == "dataset":
            return services.start_import("dataset", data["dataset"], data["name"], options)
        if self.kind == "run":
            options |= {"collection": data["collection"].name, "order": data.get("order") or Run.Order.SCORE}
        if self.kind == "qrels":
            options |= {"collection": data["collection"].name, "queries": data["queries"].name}
        if self.kind == "queries":
            options |= {"columns": chosen_columns(data), "labels_as": data.get("labels_as", "")}
        # The file as the user named it, for the job's messages (pooling.services.imports.import_job).
        options["file_name"] = data["file"].name if data.get("file") else str(self.data.get("path", "")).strip()
        if data.get("file"):
            path = keep_upload(data["file"])
            try:
                return services.start_import(
                    self.kind, path, data["name"], options, uploaded=True, file_name=data["file"].name
                )
            except ServiceError:
                path.unlink(missing_ok=True)
                raise
        return services.start_import(self.kind, data["path"], data["name"], options)


class NamedSetForm(forms.Form):
    """Import one of the field's data sets by name (the named sets' page and the API alike)."""

    set = forms.ChoiceField(choices=[(key, key) for key in NAMED_SETS], label="Data set")
    name = forms.SlugField(max_length=100, required=False, help_text="Name of what it makes (default: the set's name).")
    collection = forms.CharField(
        required=False,
        max_length=1000,
        help_text="An MS MARCO set's passages: a collection already imported (its name) or the absolute path "
        "of your collection file on the server.",
    )
    qrels = forms.CharField(
        required=False,
        max_length=1000,
        help_text="Your judgments of the set's queries over that collection: a TREC qrels file's path on the server.",
    )

    def clean(self):
        data = super().clean()
        collection = (data.get("collection") or "").strip()
        if collection and not Collection.objects.filter(name=collection).exists():
            collection = str(_checked(self, "collection", check_import_path, collection))
        data["collection"] = collection
        qrels = (data.get("qrels") or "").strip()
        if qrels:
            qrels = str(_checked(self, "qrels", check_import_path, qrels))
        data["qrels"] = qrels
        if data.get("set") and not self.errors:
            try:
                services.check_named_import(data["set"], data.get("name") or "", collection, qrels)
            except ServiceError as exc:
                add_service_error(self, exc)
        return data

    def start(self) -> Job:
        data = self.cleaned_data
        return services.start_named_set(
            data["set"], data.get("name") or "", collection=data["collection"], qrels=data["qrels"]
        )
