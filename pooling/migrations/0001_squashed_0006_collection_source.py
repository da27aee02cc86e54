"""pooling's migrations 0001–0006 in one (what a new database runs).

Django runs this squash on a database where none of 0001–0006 is applied and records all of
them; a database with some of them applied runs the remaining originals instead (they stay
beside this file). Same end state as the originals (tests/core/test_migrations.py).

The job table: 0001 created ``pooling_job`` and 0002 renamed it ``core_job`` when the Job
model moved to ``core``. Here the same two steps make it, with the columns 0001 gave it,
without ever entering pooling's state (PostgreSQL keeps the first name in the primary key's,
``pooling_job_pkey``, as on every database made before); ``core``'s 0001 (which runs after
this one) records the model and its 0003 adds the later columns, as after 0002.
"""

import django.db.models.deletion
from django.db import migrations, models

import core.db.migrations


class Migration(migrations.Migration):
    initial = True

    replaces = [
        ("pooling", "0001_initial"),
        ("pooling", "0002_move_job_to_core"),
        ("pooling", "0003_scan_chunks"),
        ("pooling", "0004_chunk_lines_and_failures"),
        ("pooling", "0005_qrels"),
        ("pooling", "0006_collection_source"),
    ]

    dependencies = []

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[],
            database_operations=[
                migrations.CreateModel(
                    name="Job",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("kind", models.CharField(max_length=50)),
                        (
                            "status",
                            models.CharField(
                                choices=[
                                    ("pending", "Pending"),
                                    ("running", "Running"),
                                    ("done", "Done"),
                                    ("failed", "Failed"),
                                ],
                                default="pending",
                                max_length=10,
                            ),
                        ),
                        ("description", models.CharField(blank=True, max_length=500)),
                        ("total", models.BigIntegerField(null=True)),
                        ("done", models.BigIntegerField(default=0)),
                        ("message", models.TextField(blank=True)),
                        ("result", models.JSONField(blank=True, default=dict)),
                        ("created", models.DateTimeField(auto_now_add=True)),
                        ("updated", models.DateTimeField(auto_now=True)),
                    ],
                    options={"ordering": ["-created"]},
                ),
                migrations.AlterModelTable(name="job", table="core_job"),
            ],
        ),
        core.db.migrations.CreateModels(
            operations=[
                migrations.CreateModel(
                    name="Collection",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("name", models.SlugField(max_length=100, unique=True)),
                        ("path", models.CharField(max_length=1000)),
                        ("size", models.BigIntegerField(help_text="File size in bytes when registered.")),
                        ("sha256", models.CharField(max_length=64)),
                        ("passages", models.BigIntegerField(help_text="Number of passages (lines).")),
                        (
                            "docid_index",
                            models.CharField(
                                help_text="Parquet file listing every docid, in file order.", max_length=1000
                            ),
                        ),
                        (
                            "source",
                            models.CharField(
                                blank=True,
                                help_text="Where it came from when not a file of the user's (e.g. an ir_datasets id).",
                                max_length=1000,
                            ),
                        ),
                        ("created", models.DateTimeField(auto_now_add=True)),
                    ],
                    options={
                        "ordering": ["name"],
                    },
                ),
                migrations.CreateModel(
                    name="QuerySet",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("name", models.SlugField(max_length=100, unique=True)),
                        (
                            "origin",
                            models.CharField(
                                choices=[
                                    ("imported", "Imported file"),
                                    ("pool", "Pool"),
                                    ("annotation", "Annotation export"),
                                ],
                                default="imported",
                                max_length=20,
                            ),
                        ),
                        (
                            "source",
                            models.CharField(
                                blank=True, help_text="File path or object it was made from.", max_length=1000
                            ),
                        ),
                        ("sha256", models.CharField(blank=True, max_length=64)),
                        ("description", models.TextField(blank=True)),
                        ("created", models.DateTimeField(auto_now_add=True)),
                    ],
                    options={
                        "ordering": ["name"],
                    },
                ),
                migrations.CreateModel(
                    name="WordList",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("name", models.CharField(max_length=200)),
                        ("sha256", models.CharField(max_length=64, unique=True)),
                        ("words", models.JSONField(help_text="{word: 'f' | 'm'}")),
                        ("created", models.DateTimeField(auto_now_add=True)),
                    ],
                ),
                migrations.CreateModel(
                    name="Query",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("qid", models.CharField(max_length=100)),
                        ("text", models.TextField()),
                        ("position", models.PositiveIntegerField(help_text="Order in the source file.")),
                        (
                            "query_set",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="queries",
                                to="pooling.queryset",
                            ),
                        ),
                    ],
                    options={
                        "ordering": ["query_set", "position"],
                        "constraints": [
                            models.UniqueConstraint(fields=("query_set", "qid"), name="unique_qid_per_query_set")
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="Qrels",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("name", models.SlugField(max_length=100, unique=True)),
                        ("path", models.CharField(max_length=1000)),
                        ("sha256", models.CharField(max_length=64)),
                        (
                            "judgments",
                            models.PositiveIntegerField(help_text="Judged (query, document) pairs imported."),
                        ),
                        ("queries", models.PositiveIntegerField(help_text="Queries with at least one judgment.")),
                        ("relevant", models.PositiveIntegerField(help_text="Judgments with relevance above 0.")),
                        (
                            "data",
                            models.CharField(help_text="Normalised Parquet file: qid, docid, rel.", max_length=1000),
                        ),
                        ("created", models.DateTimeField(auto_now_add=True)),
                        (
                            "collection",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="qrels",
                                to="pooling.collection",
                            ),
                        ),
                        (
                            "query_set",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT, related_name="qrels", to="pooling.queryset"
                            ),
                        ),
                    ],
                    options={
                        "verbose_name_plural": "qrels",
                        "ordering": ["name"],
                    },
                ),
                migrations.CreateModel(
                    name="Run",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("name", models.SlugField(max_length=100, unique=True)),
                        ("path", models.CharField(max_length=1000)),
                        ("sha256", models.CharField(max_length=64)),
                        (
                            "order",
                            models.CharField(
                                choices=[
                                    ("score", "By score, ties by docid descending (trec_eval)"),
                                    ("file", "As in the file"),
                                ],
                                default="score",
                                max_length=10,
                            ),
                        ),
                        ("queries", models.PositiveIntegerField()),
                        ("rows", models.BigIntegerField()),
                        (
                            "reordered_ties",
                            models.PositiveIntegerField(
                                default=0,
                                help_text="Queries whose file order differed from score order only because of tied scores.",
                            ),
                        ),
                        (
                            "data",
                            models.CharField(
                                help_text="Normalised Parquet file: qid, docid, rank, score.", max_length=1000
                            ),
                        ),
                        ("created", models.DateTimeField(auto_now_add=True)),
                        (
                            "collection",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="runs",
                                to="pooling.collection",
                            ),
                        ),
                    ],
                    options={
                        "ordering": ["name"],
                    },
                ),
                migrations.CreateModel(
                    name="Pool",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("name", models.SlugField(max_length=100, unique=True)),
                        ("rank_cutoff", models.PositiveIntegerField()),
                        ("depth", models.PositiveIntegerField()),
                        ("magnitude", models.CharField(max_length=10)),
                        ("tokenizer", models.CharField(max_length=20)),
                        ("created", models.DateTimeField(auto_now_add=True)),
                        (
                            "queries",
                            models.OneToOneField(
                                help_text="The pooled queries as a query set.",
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="pool",
                                to="pooling.queryset",
                            ),
                        ),
                        (
                            "source",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="pools_from",
                                to="pooling.queryset",
                            ),
                        ),
                        ("runs", models.ManyToManyField(related_name="pools", to="pooling.run")),
                        (
                            "wordlist",
                            models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, to="pooling.wordlist"),
                        ),
                    ],
                    options={
                        "ordering": ["-created"],
                    },
                ),
                migrations.CreateModel(
                    name="PoolEntry",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        (
                            "rank_bias",
                            models.FloatField(help_text="RaB@cutoff; null when the run lacks the query.", null=True),
                        ),
                        (
                            "female_position",
                            models.PositiveIntegerField(
                                help_text="1-based position in the female list if selected.", null=True
                            ),
                        ),
                        (
                            "male_position",
                            models.PositiveIntegerField(
                                help_text="1-based position in the male list if selected.", null=True
                            ),
                        ),
                        (
                            "pool",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE, related_name="entries", to="pooling.pool"
                            ),
                        ),
                        (
                            "query",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="pool_entries",
                                to="pooling.query",
                            ),
                        ),
                        (
                            "run",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE, related_name="+", to="pooling.run"
                            ),
                        ),
                    ],
                    options={
                        "constraints": [
                            models.UniqueConstraint(fields=("pool", "query", "run"), name="unique_pool_entry")
                        ],
                    },
                ),
                migrations.CreateModel(
                    name="ScanChunk",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("key", models.CharField(max_length=200)),
                        ("index", models.PositiveIntegerField()),
                        ("start", models.BigIntegerField()),
                        ("end", models.BigIntegerField()),
                        (
                            "first_line",
                            models.BigIntegerField(default=1, help_text="The file's number of the range's first line."),
                        ),
                        (
                            "status",
                            models.CharField(
                                choices=[("pending", "Pending"), ("done", "Done"), ("failed", "Failed")],
                                default="pending",
                                max_length=10,
                            ),
                        ),
                        (
                            "result",
                            models.CharField(
                                blank=True, help_text="Parquet file of the chunk's result.", max_length=1000
                            ),
                        ),
                        ("error", models.TextField(blank=True, help_text="Why a failed chunk failed.")),
                        ("updated", models.DateTimeField(auto_now=True)),
                    ],
                    options={
                        "ordering": ["key", "index"],
                        "constraints": [models.UniqueConstraint(fields=("key", "index"), name="unique_scan_chunk")],
                    },
                ),
            ],
        ),
    ]
