from annotation.crowd.services.publishing import publish_batch
from annotation.labels import LABEL_NAMES
from annotation.machine.services.calibration import DEFAULT_SAMPLE, create_calibration_sample
from annotation.management.commands._common import command_errors, format_cost, get_batch
from core.management.cli import ProjectCommand


class Command(ProjectCommand):
    help = (
        "Draw a blind calibration sample of a machine-labelled batch: a simple random sample of its "
        "machine-labelled queries (in draw order, as routing's guarantee needs), made a batch of its own "
        "(BATCH-part-N, a name that tells annotators nothing) with the batch's settings on its provider, and "
        "published. Annotators see ordinary HITs: no machine label, no confidence. A batch has one sample: "
        "--extend takes the next --sample queries of the first draw's random permutation and adds them to it as a "
        "further batch (the union is still one simple random sample, so routing's guarantee stays valid). When the crowd has "
        "labelled it, see: manage.py calibration BATCH."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="the machine-labelled batch (a draft with pre-labels)")
        parser.add_argument(
            "--sample",
            type=int,
            default=DEFAULT_SAMPLE,
            help=f"queries to draw (default {DEFAULT_SAMPLE}); with --extend, how many more",
        )
        parser.add_argument(
            "--extend", action="store_true", help="add --sample queries to the batch's sample instead of a new one"
        )
        parser.add_argument("--labeller", help="sample this pre-labeller's labels (default: the latest run)")
        parser.add_argument(
            "--seed",
            type=int,
            default=0,
            help="random seed of the draw (default 0); an extension continues the first draw's permutation "
            "(its seed), so --seed does not change what --extend draws",
        )
        parser.add_argument("--sample-name", default="", help="name of the sample's batch (default BATCH-part-N)")
        parser.add_argument("--no-publish", action="store_true", help="create the sample's batch but do not publish it")

    def handle(self, name, sample, extend, labeller, seed, sample_name, no_publish, **o):
        batch = get_batch(name)
        with command_errors():
            child = create_calibration_sample(
                batch, sample, labeller=labeller, seed=seed, name=sample_name, extend=extend
            )
            derivation = child.derivation
            what = f"extension {derivation['look'] - 1} of the calibration sample" if extend else "Calibration sample"
            self.stdout.write(
                f"{what[0].upper() + what[1:]} {child.name!r}: {len(derivation['stratum_of'])} queries of "
                f"{batch.name!r} drawn at random, labelled by {derivation['labeller']} ({derivation['model']}, "
                f"{derivation['prompt_version']}) as:"
            )
            for stratum in derivation["strata"]:
                self.stdout.write(
                    f"  {LABEL_NAMES[stratum['label']]:<26} {stratum['sampled']:>5} of {stratum['population']}"
                )
            self.stdout.write(f"Cost: {format_cost(child.cost)}")
            if no_publish:
                self.stdout.write(f"Publish it with: manage.py publish_batch {child.name}")
                return
            published = publish_batch(child, bar=o["verbosity"] > 0)
        self.stdout.write(self.style.SUCCESS(f"Published {published} HIT(s) of {child.name!r} on {child.provider}."))
