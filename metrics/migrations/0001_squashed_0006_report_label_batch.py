"""metrics' migrations 0001–0006 in one (what a new database runs).

Django runs this squash on a database where none of the migrations it replaces is applied,
and records them all; a database with only some of them applied runs the remaining originals
instead (they stay beside this file until every deployment has passed them). The end state is
the originals' (tests/core/test_migrations.py).
"""

import django.db.models.deletion
from django.db import migrations, models

import core.db.migrations


class Migration(migrations.Migration):
    initial = True

    replaces = [
        ("metrics", "0001_initial"),
        ("metrics", "0002_report_nfairr_normaliser"),
        ("metrics", "0003_report_effectiveness"),
        ("metrics", "0004_report_unreturned_p_policy"),
        ("metrics", "0005_exposure_settings"),
        ("metrics", "0006_report_label_batch"),
    ]

    dependencies = [
        ("pooling", "0005_qrels"),
        ("annotation", "0017_account_epoch"),
    ]

    operations = [
        core.db.migrations.CreateModels(
            operations=[
                migrations.CreateModel(
                    name="Report",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("name", models.SlugField(max_length=100, unique=True)),
                        (
                            "run_order",
                            models.JSONField(default=list, help_text="Run names in the order they were given."),
                        ),
                        ("tokenizer", models.CharField(max_length=20)),
                        ("cutoffs", models.JSONField(help_text="Sorted list of rank cutoffs.")),
                        (
                            "threshold",
                            models.FloatField(
                                default=1, help_text="τ of NFaiRR: at most this many list words is neutral."
                            ),
                        ),
                        (
                            "nfairr_normaliser",
                            models.CharField(
                                default="comparison",
                                help_text="With a background run: 'comparison' (background + every run of the report, one denominator for all) or 'exact' (background alone, the original definition; may exceed 1).",
                                max_length=20,
                            ),
                        ),
                        (
                            "awrf_weights",
                            models.CharField(
                                default="dcg",
                                help_text="AWRF's position weights: dcg 1/log2(r+1), trec 1/log2(max(r,2)), geometric p(1-p)^(r-1).",
                                max_length=20,
                            ),
                        ),
                        (
                            "awrf_p",
                            models.FloatField(
                                default=0.5, help_text="The geometric weights' p (first rank's share of attention)."
                            ),
                        ),
                        (
                            "exposure_target",
                            models.FloatField(
                                default=0.5,
                                help_text="Target female share of exposure (AWRF) and of each prefix (rKL, rND, rRD).",
                            ),
                        ),
                        (
                            "protected_group",
                            models.CharField(
                                default="female", help_text="rKL/rND/rRD's protected group.", max_length=10
                            ),
                        ),
                        (
                            "cut_step",
                            models.PositiveIntegerField(
                                default=10, help_text="rKL/rND/rRD's cut points: every this many ranks."
                            ),
                        ),
                        (
                            "measures",
                            models.JSONField(
                                blank=True, default=list, help_text="Effectiveness measures (ir_measures names)."
                            ),
                        ),
                        (
                            "unjudged",
                            models.JSONField(
                                blank=True,
                                default=list,
                                help_text="Query-set queries the qrels do not judge: listed with empty values, left out of the means.",
                            ),
                        ),
                        (
                            "unreturned",
                            models.JSONField(
                                blank=True,
                                default=None,
                                help_text="Per run name, the judged queries the run does not return: each counts as 0 in its effectiveness (ir_measures' default, trec_eval -c). Null: built before that rule (such queries were left out of its means); build the report again.",
                                null=True,
                            ),
                        ),
                        ("bootstrap_samples", models.PositiveIntegerField(default=1000)),
                        ("seed", models.IntegerField(default=0)),
                        ("software_version", models.CharField(max_length=100)),
                        ("per_query", models.CharField(help_text="Parquet file of per-query values.", max_length=1000)),
                        (
                            "labels_file",
                            models.CharField(
                                blank=True,
                                help_text="Parquet file of every judged query's label probabilities, label source and set membership (a report on a batch's labels); per_query then holds every judged query's values.",
                                max_length=1000,
                            ),
                        ),
                        (
                            "answers_version",
                            models.CharField(
                                blank=True, help_text="The batch's answers when the report was built.", max_length=64
                            ),
                        ),
                        (
                            "labels_calibrated",
                            models.BooleanField(
                                blank=True,
                                help_text="Machine-accepted labels were calibrated on a blind sample (null: none).",
                                null=True,
                            ),
                        ),
                        ("created", models.DateTimeField(auto_now_add=True)),
                        (
                            "background_run",
                            models.ForeignKey(
                                blank=True,
                                help_text="NFaiRR's background; empty means the whole collection.",
                                null=True,
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="+",
                                to="pooling.run",
                            ),
                        ),
                        (
                            "baseline",
                            models.ForeignKey(
                                blank=True,
                                help_text="Run the others are tested against.",
                                null=True,
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="+",
                                to="pooling.run",
                            ),
                        ),
                        (
                            "label_batch",
                            models.ForeignKey(
                                blank=True,
                                help_text="A report on a batch's labels: the batch whose non-gendered queries are the query set; its intervals carry the labels' uncertainty (metrics.label_uncertainty).",
                                null=True,
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="+",
                                to="annotation.batch",
                            ),
                        ),
                        (
                            "qrels",
                            models.ForeignKey(
                                blank=True,
                                help_text="Relevance judgments of the effectiveness measures; empty: bias metrics only.",
                                null=True,
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="reports",
                                to="pooling.qrels",
                            ),
                        ),
                        (
                            "query_set",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="reports",
                                to="pooling.queryset",
                            ),
                        ),
                        (
                            "representative_wordlist",
                            models.ForeignKey(
                                help_text="Representative list (NFaiRR, TExFAIR).",
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="+",
                                to="pooling.wordlist",
                            ),
                        ),
                        ("runs", models.ManyToManyField(related_name="reports", to="pooling.run")),
                        (
                            "wordlist",
                            models.ForeignKey(
                                help_text="Definitional list (RaB, ARaB).",
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="+",
                                to="pooling.wordlist",
                            ),
                        ),
                    ],
                    options={
                        "ordering": ["-created", "-pk"],
                    },
                ),
                migrations.CreateModel(
                    name="Result",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("metric", models.CharField(max_length=20)),
                        ("variant", models.CharField(max_length=100)),
                        ("cutoff", models.PositiveIntegerField()),
                        ("value", models.FloatField(null=True)),
                        ("queries", models.PositiveIntegerField()),
                        ("ci_low", models.FloatField(null=True)),
                        ("ci_high", models.FloatField(null=True)),
                        (
                            "p_value",
                            models.FloatField(
                                help_text="Paired t-test against the baseline, Holm-adjusted within its family (every run against the baseline for this metric, variant and cutoff): metrics.significance. A report on a batch's labels: the combined test's (metrics.label_uncertainty).",
                                null=True,
                            ),
                        ),
                        (
                            "corrected",
                            models.FloatField(
                                help_text="Label-corrected mean (class mean of the non-gendered).", null=True
                            ),
                        ),
                        (
                            "combined_low",
                            models.FloatField(help_text="Interval with label and query uncertainty.", null=True),
                        ),
                        ("combined_high", models.FloatField(null=True)),
                        (
                            "label_share",
                            models.FloatField(
                                help_text="Share of the combined width the labels contribute.", null=True
                            ),
                        ),
                        (
                            "difference_low",
                            models.FloatField(
                                help_text="Query-only interval of the difference to the baseline.", null=True
                            ),
                        ),
                        ("difference_high", models.FloatField(null=True)),
                        ("difference_corrected", models.FloatField(null=True)),
                        ("difference_combined_low", models.FloatField(null=True)),
                        ("difference_combined_high", models.FloatField(null=True)),
                        ("difference_label_share", models.FloatField(null=True)),
                        (
                            "query_p_value",
                            models.FloatField(
                                help_text="The paired t-test's p (Holm), beside the combined test's.", null=True
                            ),
                        ),
                        (
                            "report",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE, related_name="results", to="metrics.report"
                            ),
                        ),
                        (
                            "run",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT, related_name="+", to="pooling.run"
                            ),
                        ),
                    ],
                    options={
                        "ordering": ["report", "pk"],
                        "constraints": [
                            models.UniqueConstraint(
                                fields=("report", "run", "metric", "variant", "cutoff"), name="unique_report_result"
                            )
                        ],
                    },
                ),
            ],
        ),
    ]
