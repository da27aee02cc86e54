from annotation import services
from annotation.labels import LABEL_NAMES
from annotation.services.calibration import DEFAULT_SAMPLE, create_calibration_sample
from core.cli import ProjectCommand

from ._common import command_errors, format_cost, get_batch


class Command(ProjectCommand):
    help = (
        "Draw a blind calibration sample of a machine-labelled batch: a random sample stratified by the "
        "machine's label, made a batch of its own (BATCH-part-1, a name that tells annotators nothing) with the batch's settings on its "
        "provider, and published. Annotators see ordinary HITs: no machine label, no confidence. When the "
        "crowd has labelled it, see: manage.py calibration BATCH."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="the machine-labelled batch (a draft with pre-labels)")
        parser.add_argument(
            "--sample", type=int, default=DEFAULT_SAMPLE, help=f"queries in the sample (default {DEFAULT_SAMPLE})"
        )
        parser.add_argument("--labeller", help="stratify by this pre-labeller's labels (default: the latest run)")
        parser.add_argument("--seed", type=int, default=0, help="random seed of the sample (default 0)")
        parser.add_argument("--sample-name", default="", help="name of the sample's batch (default BATCH-part-N)")
        parser.add_argument("--no-publish", action="store_true", help="create the sample's batch but do not publish it")

    def handle(self, name, sample, labeller, seed, sample_name, no_publish, **o):
        batch = get_batch(name)
        with command_errors():
            child = create_calibration_sample(batch, sample, labeller=labeller, seed=seed, name=sample_name)
            derivation = child.derivation
            self.stdout.write(
                f"Calibration sample {child.name!r}: {len(derivation['stratum_of'])} queries of {batch.name!r}, "
                f"stratified by {derivation['labeller']} ({derivation['model']}, {derivation['prompt_version']}):"
            )
            for stratum in derivation["strata"]:
                self.stdout.write(
                    f"  {LABEL_NAMES[stratum['label']]:<26} {stratum['sampled']:>5} of {stratum['population']}"
                )
            self.stdout.write(f"Cost: {format_cost(child.cost)}")
            if no_publish:
                self.stdout.write(f"Publish it with: manage.py publish_batch {child.name}")
                return
            published = services.publish_batch(child, bar=o["verbosity"] > 0)
        self.stdout.write(self.style.SUCCESS(f"Published {published} HIT(s) of {child.name!r} on {child.provider}."))
