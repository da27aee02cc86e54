from annotation.crowd.services.publishing import publish_batch
from annotation.machine.services.calibration import DEFAULT_SAMPLE, create_calibration_sample, escalation_limit
from annotation.machine.services.routing import DEFAULT_RISK, size_sample
from annotation.management.commands._common import command_errors, format_cost, get_batch
from core.management.cli import ProjectCommand, decimal_number, whole_number
from genderbias.labels import LABEL_NAMES


class Command(ProjectCommand):
    help = (
        "Draw a blind calibration sample of a machine-labelled batch: a simple random sample of its "
        "machine-labelled queries (in draw order, as routing's guarantee needs), made a batch of its own "
        "(BATCH-part-N, a name that tells annotators nothing) with the batch's settings on its provider, and "
        "published. Annotators see ordinary HITs: no machine label, no confidence. By default the sample is drawn "
        "whole: all of routing's risk goes to the exact test of this one draw, which keeps the most; --extendable "
        "draws one that --extend can continue later (the union is still one simple random sample; routing then "
        "spends 0.2 of its risk on a test that allows it). The sample's queries without a decisive crowd label "
        "get more votes at every sync, up to --escalation-cap assignments of their HIT (default 7; the batch's "
        "votes per query: none, a split then counts as the machine's error): routing certifies against that "
        "final crowd label. --size-for A prints, before drawing anything, how large a first draw would certify A. "
        "When the crowd has labelled it, see: manage.py calibration BATCH."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="the machine-labelled batch (a draft with pre-labels)")
        parser.add_argument(
            "--sample",
            type=whole_number,
            default=DEFAULT_SAMPLE,
            help=f"queries to draw (default {DEFAULT_SAMPLE}); with --extend, how many more",
        )
        parser.add_argument(
            "--extend", action="store_true", help="add --sample queries to the batch's sample instead of a new one"
        )
        parser.add_argument(
            "--extendable", action="store_true", help="draw a sample that --extend may continue (δ split)"
        )
        parser.add_argument(
            "--escalation-cap",
            type=whole_number,
            help="assignments a sample HIT may get when one of its queries has no decisive crowd label (default 7)",
        )
        parser.add_argument(
            "--until",
            default="majority",
            help="when a crowd label is decisive: majority (default) or posterior:P, e.g. posterior:0.9",
        )
        parser.add_argument(
            "--size-for",
            type=decimal_number,
            metavar="A",
            help="draw nothing: print how large a first draw would certify target A (at the machine's confidence "
            "taken as its accuracy), with its cost",
        )
        parser.add_argument(
            "--risk", type=decimal_number, default=DEFAULT_RISK, help="with --size-for: the risk δ (0.05)"
        )
        parser.add_argument("--labeller", help="sample this pre-labeller's labels (default: the latest run)")
        parser.add_argument(
            "--seed",
            type=whole_number,
            default=0,
            help="random seed of the draw (default 0); an extension continues the first draw's permutation "
            "(its seed), so --seed does not change what --extend draws",
        )
        parser.add_argument("--sample-name", default="", help="name of the sample's batch (default BATCH-part-N)")
        parser.add_argument("--no-publish", action="store_true", help="create the sample's batch but do not publish it")

    def handle(self, name, sample, extend, extendable, escalation_cap, until, size_for, risk, labeller, seed, **o):
        batch = get_batch(name)
        out = self.stdout.write
        with command_errors(flags={"target_accuracy": "--size-for"}):
            if size_for is not None:
                rows = size_sample(batch, size_for, risk=risk, labeller=labeller)
                out(
                    f"First draws of {batch.name!r} drawn whole, target {size_for:g}, risk {risk:g}, at the machine's "
                    "confidence taken as its agreement with the reference (200 simulated draws each):"
                )
                out(f"  {'sample':>7} {'certifies':>10} {'kept':>7} {'cost':>10}")
                for row in rows:
                    out(f"  {row['sample']:>7} {row['certified_rate']:>10.0%} {row['kept']:>7} {'$' + row['cost']:>10}")
                best = max(rows, key=lambda row: (row["kept"], -row["sample"]), default=None)
                if best and best["kept"]:
                    out(
                        f"Keeps the most: --sample {best['sample']}. (Every sample query is labelled by the crowd anyway.)"
                    )
                else:
                    out("No size certifies the target at this profile: the machine cannot reach it.")
                return
            child = create_calibration_sample(
                batch,
                sample,
                labeller=labeller,
                seed=seed,
                name=o["sample_name"],
                extend=extend,
                extendable=extendable,
                escalation_cap=escalation_cap,
                until=until,
            )
            derivation = child.derivation
            what = f"extension {derivation['look'] - 1} of the calibration sample" if extend else "Calibration sample"
            out(
                f"{what[0].upper() + what[1:]} {child.name!r}: {len(derivation['stratum_of'])} queries of "
                f"{batch.name!r} drawn at random, labelled by {derivation['labeller']} ({derivation['model']}, "
                f"{derivation['prompt_version']}) as:"
            )
            for stratum in derivation["strata"]:
                out(f"  {LABEL_NAMES[stratum['label']]:<26} {stratum['sampled']:>5} of {stratum['population']}")
            out(f"Cost: {format_cost(child.cost)}")
            reference = derivation.get("reference")
            if reference and reference["cap"] > reference["votes"]:
                limit = escalation_limit(child, len(derivation["stratum_of"]), reference)
                out(
                    f"Queries without a decisive crowd label ({reference['until']}) get more votes at every sync, up to "
                    f"{reference['cap']} assignments of their HIT: at most ${limit} more (usually a small part of it)."
                )
            out(
                "Drawn to be extendable (risk split with a betting test)."
                if derivation.get("extendable")
                else "Drawn whole: all of routing's risk goes to the exact test of this draw; it cannot be extended."
            )
            if o["no_publish"]:
                out(f"Publish it with: manage.py publish_batch {child.name}")
                return
            published = publish_batch(child, bar=o["verbosity"] > 0)
        out(self.style.SUCCESS(f"Published {published} HIT(s) of {child.name!r} on {child.provider}."))
