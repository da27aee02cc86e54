from decimal import Decimal

from annotation.machine.prelabellers import prelabeller_names
from annotation.machine.services.prelabels import prelabel_batch
from annotation.management.commands._common import command_errors, get_batch
from core.management.cli import ProjectCommand, whole_number
from genderbias.labels import LABEL_NAMES


class Command(ProjectCommand):
    help = (
        "Pre-label a batch's queries with a machine (the study's gender words; a text classifier "
        "trained on labelled queries, --train; or an OpenAI-compatible chat model: PRELABEL_API_URL, "
        "PRELABEL_API_KEY, PRELABEL_MODEL) and store a label and a confidence per query. Rerunning "
        "replaces the same labeller's labels; the chat model's answers are cached, so a rerun makes "
        "no request."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="batch name")
        parser.add_argument(
            "--labeller",
            required=True,
            choices=prelabeller_names(),
            help=(
                "the machine: rules (the study's gender words, no network), trained (a text classifier "
                "fitted on --train) or openai (the chat model of PRELABEL_API_URL and PRELABEL_MODEL, "
                "answers cached; limits PRELABEL_CALL_DEADLINE, PRELABEL_JOB_DEADLINE)"
            ),
        )
        parser.add_argument(
            "--samples",
            type=whole_number,
            default=None,
            help="answers first sampled per query (openai; default PRELABEL_SAMPLES; more up to PRELABEL_MAX_SAMPLES)",
        )
        parser.add_argument(
            "--train",
            metavar="SOURCE",
            default=None,
            help=(
                "what the trained labeller learns from (trained only, required): a labelled query file, "
                "TSV qid<TAB>query<TAB>label or the study's CSV qid,query,label, or batch:NAME for a "
                "batch's human labels so far"
            ),
        )

    def handle(self, name, labeller, samples, train, **o):
        batch = get_batch(name)
        with command_errors():
            summary = prelabel_batch(batch, labeller, samples=samples, train=train)
        out = self.stdout.write
        out(f"Pre-labelled batch {batch.name!r} with {summary.labeller} ({summary.model}, {summary.prompt_version}):")
        for code, count in summary.counts.items():
            out(f"  {LABEL_NAMES[code]:<26} {count}")
        if summary.unlabelled:
            out(f"  {'no label (unparseable)':<26} {summary.unlabelled}")
        mean = "-" if summary.mean_confidence is None else f"{summary.mean_confidence:.3f}"
        out(f"Mean confidence: {mean}")
        if summary.cv_accuracy is not None:
            out(
                f"Cross-validated accuracy: {summary.cv_accuracy:.3f} ± {summary.cv_accuracy_std:.3f} "
                f"({summary.cv_folds} folds, {summary.training_size} training queries)"
            )
        if summary.cv_note:
            out(f"Cross-validation: {summary.cv_note}")
        usage = summary.usage
        if summary.labeller == "openai":
            out(
                f"Requests: {usage.requests} ({usage.sampled_queries} queries asked, {usage.cached_queries} from the "
                f"cache); unparseable answers: {usage.unparseable}"
            )
            out(
                f"Answers drawn: {usage.answers} ({usage.logprob_answers} with log-probabilities); "
                f"{usage.answers / max(1, usage.sampled_queries):.1f} per query asked"
            )
            out(
                f"Tokens: {usage.prompt_tokens} prompt + {usage.completion_tokens} completion; "
                f"cost: ${usage.cost.quantize(Decimal('0.000001'))}"
            )
        self.stdout.write(self.style.SUCCESS(f"{summary.labelled} label(s) stored."))
