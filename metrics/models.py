"""State of the metrics app: a :class:`Report` records everything needed to compute it again, and its results, a
:class:`Result` row per (run, metric, variant, cutoff); per-query values are many, so they live in a Parquet file
under ``settings.CACHE_DIR``.
"""

from __future__ import annotations

from django.db import models

from core.models import GroupOwned, GroupScopedManager
from core.options import (
    AWRF_P_OPTION,
    AWRF_WEIGHTS_OPTION,
    CUT_STEP_OPTION,
    EXPOSURE_FORM_OPTION,
    EXPOSURE_TARGET_OPTION,
    NORMALISER_OPTION,
    PRESET_OPTION,
    PROTECTED_OPTION,
    THRESHOLD_OPTION,
    TIES_OPTION,
    TOKENIZER_OPTION,
    ReportOption,
)
from genderbias.presets import preset_lines
from genderbias.ranking.defaults import COLLECTION_BACKGROUND
from genderbias.ranking.vocabulary import EXPOSURE, FORM_DEFINITIONS, form_statement
from pooling.models import Qrels, QuerySet, Run, WordList


def _option_field(option: ReportOption, max_length: int = 20) -> models.CharField:
    """A report's stored choice, with its declaration's choices, default and help (``""``: none given)."""
    blank = {"blank": True} if option.default == "" else {}
    return models.CharField(
        max_length=max_length, choices=option.choices, default=option.default, help_text=option.help, **blank
    )


def _optional(to: type[models.Model] | str, help_text: str, related_name: str = "+") -> models.ForeignKey:
    """An optional reference of a report, whose row may not be deleted while a report names it."""
    return models.ForeignKey(
        to, on_delete=models.PROTECT, null=True, blank=True, related_name=related_name, help_text=help_text
    )


class Report(GroupOwned):
    name = models.SlugField(max_length=100, unique=True)
    query_set = models.ForeignKey(QuerySet, on_delete=models.PROTECT, related_name="reports")
    runs = models.ManyToManyField(Run, related_name="reports")
    run_order = models.JSONField(default=list, help_text="Run names in the order they were given.")
    wordlist = models.ForeignKey(
        WordList, on_delete=models.PROTECT, related_name="+", help_text="Definitional list (RaB, ARaB)."
    )
    representative_wordlist = models.ForeignKey(
        WordList, on_delete=models.PROTECT, related_name="+", help_text="Representative list (NFaiRR, TExFAIR)."
    )
    tokenizer = models.CharField(max_length=20, choices=TOKENIZER_OPTION.choices, help_text=TOKENIZER_OPTION.help)
    cutoffs = models.JSONField(help_text="Sorted list of rank cutoffs.")
    threshold = models.FloatField(default=THRESHOLD_OPTION.default, help_text=THRESHOLD_OPTION.help)
    background_run = _optional(Run, "NFaiRR's background; empty means the whole collection.")
    # Each setting's choices, default and help are its declaration's (core.options).
    nfairr_normaliser = _option_field(NORMALISER_OPTION)
    awrf_weights = _option_field(AWRF_WEIGHTS_OPTION)
    awrf_p = models.FloatField(default=AWRF_P_OPTION.default, help_text=AWRF_P_OPTION.help)
    exposure_target = models.FloatField(default=EXPOSURE_TARGET_OPTION.default, help_text=EXPOSURE_TARGET_OPTION.help)
    protected_group = _option_field(PROTECTED_OPTION, max_length=10)
    cut_step = models.PositiveIntegerField(default=CUT_STEP_OPTION.default, help_text=CUT_STEP_OPTION.help)
    exposure_form = _option_field(EXPOSURE_FORM_OPTION)
    ties = _option_field(TIES_OPTION)
    preset = _option_field(PRESET_OPTION)
    tied_queries = models.JSONField(
        null=True,
        blank=True,
        default=None,
        help_text="Per run name, per cutoff: how many of its queries' top k hold a tied document "
        "(null: built before ties were counted).",
    )
    baseline = _optional(Run, "Run the others are tested against.")
    qrels = _optional(Qrels, "Relevance judgments of the effectiveness measures; empty: bias metrics only.", "reports")
    measures = models.JSONField(default=list, blank=True, help_text="Effectiveness measures (ir_measures names).")
    unjudged = models.JSONField(
        default=list,
        blank=True,
        help_text="Query-set queries the qrels do not judge: listed with empty values, left out of the means.",
    )
    unreturned = models.JSONField(
        null=True,
        blank=True,
        default=None,
        help_text="Per run name, the judged queries the run does not return: each counts as 0 in its "
        "effectiveness (ir_measures' default, trec_eval -c). Null: built before that rule (such "
        "queries were left out of its means); build the report again.",
    )
    bootstrap_samples = models.PositiveIntegerField(default=1000)
    seed = models.IntegerField(default=0)
    software_version = models.CharField(max_length=100)
    texts_sha256 = models.CharField(
        max_length=64,
        blank=True,
        help_text="A collection by reference: the checksum of the texts read (genderbias.files.docstores.checksum_of_texts).",
    )
    texts_read = models.PositiveIntegerField(
        null=True, help_text="A collection by reference: how many texts the checksum covers."
    )
    per_query = models.CharField(max_length=1000, help_text="Parquet file of per-query values.")
    label_batch = _optional(
        "annotation.Batch",
        "A report on a batch's labels: the batch whose non-gendered queries are the query set; "
        "its intervals carry the labels' uncertainty (genderbias.crowd.label_uncertainty).",
    )
    labels_file = models.CharField(
        max_length=1000,
        blank=True,
        help_text="Parquet file of every judged query's label probabilities, label source and set "
        "membership (a report on a batch's labels); per_query then holds every judged query's values.",
    )
    answers_version = models.CharField(
        max_length=64, blank=True, help_text="The batch's answers when the report was built."
    )
    labels_calibrated = models.BooleanField(
        null=True, blank=True, help_text="Machine-accepted labels were calibrated on a blind sample (null: none)."
    )
    crowd_quality = models.JSONField(
        null=True,
        blank=True,
        help_text="A report on a batch's labels: how much the crowd's answers say and whether the "
        "label-corrected intervals are to be trusted (genderbias.crowd.label_probabilities.crowd_quality).",
    )
    label_interval = models.JSONField(
        null=True,
        blank=True,
        help_text="A report on a batch's labels: which interval its label-corrected figures got (kind: audit, "
        "crowd or may_not_cover) and the sentence that says why (genderbias.crowd.figure_intervals.interval_choice); "
        "null: built before the choice was made (the crowd model's interval).",
    )
    methods = models.JSONField(
        default=dict,
        blank=True,
        help_text="The version of each method that computed the report (genderbias.methods): its page and "
        "papers describe it by these.",
    )
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created", "-pk"]

    def __str__(self) -> str:
        return self.name

    @property
    def on_batch(self) -> bool:
        """A report on a batch's labels (its intervals carry label uncertainty)."""
        return self.label_batch_id is not None

    @property
    def interval_sentence(self) -> str | None:
        """Which interval its label-corrected figures got and why, the one sentence every surface prints (None on a
        query set, or built before the choice was made)."""
        return (self.label_interval or {}).get("sentence")

    @property
    def figure_quality(self) -> dict | None:
        """The crowd check whose warning its label-corrected figures carry: none where they got the audit
        sample's PPI++ interval (which rests on no crowd model) or no interval (they may not cover)."""
        if (self.label_interval or {}).get("kind") in ("audit", "may_not_cover"):
            return None
        return self.crowd_quality

    @property
    def background(self) -> str:
        return self.background_run.name if self.background_run_id else COLLECTION_BACKGROUND

    @property
    def nfairr_normalisation(self) -> str:
        """How NFaiRR was normalised, in words, for the report page."""
        if not self.background_run_id:
            return "by the collection (Σ w_r over the cutoff)"
        if self.nfairr_normaliser == "exact":
            return f"by {self.background_run.name} alone (exact original definition; values above 1 possible)"
        return f"by {self.background_run.name} together with every run of this report (one denominator per query)"

    @property
    def exposure_settings(self) -> str:
        """The exposure metrics' choices, in words, for the report page and the command."""
        weights = f"geometric (p = {self.awrf_p:g})" if self.awrf_weights == "geometric" else self.awrf_weights
        target = "" if self.exposure_form == "reference" else f"target female share {self.exposure_target:g}; "
        return (
            f"AWRF with {weights} weights; {target}rKL/rND/rRD with {self.protected_group} protected, cut points "
            f"every {self.cut_step} ranks; neutral documents (at most τ representative words) outside the groups; "
            f"{FORM_DEFINITIONS[self.exposure_form].title}"
        )

    @property
    def ties_statement(self) -> str:
        """How tied documents were ordered, in words (header, CSV, methods text, paper bundle)."""
        words = {
            "tie-aware": "tie-aware: every bias figure is its expectation over all orders of tied documents "
            "(documents of one query with equal scores)",
            "trec_eval": "trec_eval's order: tied documents by docid descending",
            "file": "the run's own order (as stored at import)",
        }
        text = f"Tied documents: {words[self.ties]}; effectiveness follows trec_eval (ir_measures), ties by docid descending."
        if self.preset:
            text += f" Preset {self.preset}: " + "; ".join(preset_lines(self.preset)) + "."
        return text

    @property
    def exposure_definition(self) -> str:
        """Which form the exposure metrics were computed in and how it differs from the cited papers."""
        return form_statement(self.exposure_form, EXPOSURE)


class Result(models.Model):
    """A model's value of one metric: the mean over the queries it contains, with its uncertainty."""

    report = models.ForeignKey(Report, on_delete=models.CASCADE, related_name="results")
    run = models.ForeignKey(Run, on_delete=models.PROTECT, related_name="+")
    metric = models.CharField(max_length=20)
    variant = models.CharField(max_length=100)
    cutoff = models.PositiveIntegerField()
    value = models.FloatField(null=True)
    queries = models.PositiveIntegerField()
    ci_low = models.FloatField(null=True)
    ci_high = models.FloatField(null=True)
    p_value = models.FloatField(
        null=True,
        help_text="Paired t-test against the baseline, Holm-adjusted within its family "
        "(every run against the baseline for this metric, variant and cutoff): genderbias.stats.significance. "
        "A report on a batch's labels: the combined test's (genderbias.crowd.label_uncertainty).",
    )
    tie_low = models.FloatField(
        null=True, help_text="The lowest value over the orders of tied documents (null: no order of ties moves it)."
    )
    tie_high = models.FloatField(null=True, help_text="The highest value over the orders of tied documents.")
    # A report on a batch's labels (genderbias.crowd.label_uncertainty): null otherwise.
    corrected = models.FloatField(null=True, help_text="Label-corrected mean (class mean of the non-gendered).")
    combined_low = models.FloatField(null=True, help_text="Interval with label and query uncertainty.")
    combined_high = models.FloatField(null=True)
    label_share = models.FloatField(null=True, help_text="Share of the combined width the labels contribute.")
    difference_low = models.FloatField(null=True, help_text="Query-only interval of the difference to the baseline.")
    difference_high = models.FloatField(null=True)
    difference_corrected = models.FloatField(null=True)
    difference_combined_low = models.FloatField(null=True)
    difference_combined_high = models.FloatField(null=True)
    difference_label_share = models.FloatField(null=True)
    query_p_value = models.FloatField(null=True, help_text="The paired t-test's p (Holm), beside the combined test's.")

    scope_via = "report"  # its research group is its report's
    objects = GroupScopedManager()

    class Meta:
        ordering = ["report", "pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["report", "run", "metric", "variant", "cutoff"], name="unique_report_result"
            )
        ]

    def __str__(self) -> str:
        return f"{self.report_id}/{self.run_id} {self.metric}[{self.variant}]@{self.cutoff} = {self.value}"


class LabelSensitivityResult(GroupOwned):
    """Label sensitivity of a batch under one set of settings, computed once by a job and kept: ``key`` digests
    everything the figures depend on (:func:`metrics.services.labelling.sensitivity_key`), so asking again returns
    this row. ``result`` is empty while its ``job`` runs (or after it failed: the next ask starts another)."""

    key = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the settings and the answers' state.")
    batch = models.ForeignKey("annotation.Batch", on_delete=models.CASCADE, related_name="+")
    settings = models.JSONField(help_text="Run names in order, background, cutoffs, bootstrap, seed, threshold.")
    answers_version = models.CharField(max_length=64, help_text="The batch's answers when it was asked for.")
    job = models.ForeignKey(
        "core.Job", on_delete=models.SET_NULL, null=True, blank=True, related_name="+", help_text="The computing job."
    )
    result = models.JSONField(
        null=True, blank=True, help_text="metrics.formatting.sensitivity_result; empty until done."
    )
    created = models.DateTimeField(auto_now_add=True)
    computed = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created", "-pk"]

    def __str__(self) -> str:
        return f"label sensitivity of {self.batch_id} ({'done' if self.result is not None else 'computing'})"
