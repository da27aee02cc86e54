"""A report's settings (:class:`ReportSettings`), what a report may take besides them (:class:`ReportInputs`), and
the typed cut-offs and effectiveness measures read into them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypedDict

from core.errors import FieldError, ServiceError
from core.models import Job
from core.options import (
    AWRF_P_OPTION,
    AWRF_WEIGHTS_OPTION,
    BOOTSTRAP_OPTION,
    CUT_STEP_OPTION,
    CUTOFFS_OPTION,
    EXPOSURE_FORM_OPTION,
    EXPOSURE_TARGET_OPTION,
    NORMALISER_OPTION,
    PROTECTED_OPTION,
    REPORT_OPTIONS,
    SEED_OPTION,
    THRESHOLD_OPTION,
    TIES_OPTION,
    TOKENIZER_OPTION,
    ReportOption,
)
from genderbias.presets import PRESETS
from genderbias.ranking.defaults import OptionError
from genderbias.ranking.effectiveness import parse_measures as parse
from genderbias.text.wordlists import GenderWords
from pooling.models import Qrels, Run


@dataclass(frozen=True)
class ReportSettings:
    """A report's settings, each stored in the :class:`metrics.models.Report` field of its name; each one's default
    and rule are its declaration's (:mod:`core.options`)."""

    cutoffs: tuple[int, ...] = CUTOFFS_OPTION.default
    tokenizer: str = TOKENIZER_OPTION.default
    threshold: float = THRESHOLD_OPTION.default
    bootstrap_samples: int = BOOTSTRAP_OPTION.default
    seed: int = SEED_OPTION.default
    nfairr_normaliser: str = NORMALISER_OPTION.default
    #: Effectiveness measures (ir_measures names, ``RR@10``…), computed against the report's qrels.
    measures: tuple[str, ...] = ()
    #: The exposure metrics' choices (:mod:`genderbias.ranking.exposure`).
    awrf_weights: str = AWRF_WEIGHTS_OPTION.default
    awrf_p: float = AWRF_P_OPTION.default
    exposure_target: float = EXPOSURE_TARGET_OPTION.default
    protected_group: str = PROTECTED_OPTION.default
    cut_step: int = CUT_STEP_OPTION.default
    #: ``adapted`` (the platform's) or ``reference`` (the cited papers' code): :mod:`genderbias.ranking.exposure`.
    exposure_form: str = EXPOSURE_FORM_OPTION.default
    #: How tied documents are ordered for the bias metrics (:mod:`genderbias.ranking.ties`; effectiveness follows trec_eval).
    ties: str = TIES_OPTION.default
    #: A paper preset (:mod:`genderbias.presets`): its settings win over these (:meth:`resolved`); "" for none.
    preset: str = ""

    def resolved(self) -> ReportSettings:
        """These settings with the preset's applied (the values a report is computed and stored with)."""
        from dataclasses import replace

        if not self.preset:
            return self
        if self.preset not in PRESETS:
            raise ServiceError(f"unknown preset {self.preset!r}; choose one of {', '.join(PRESETS)}")
        return replace(self, **PRESETS[self.preset].settings)

    def exposure(self):
        """The :class:`genderbias.ranking.exposure.ExposureSettings` of these settings (τ is NFaiRR's)."""
        from genderbias.ranking.exposure import ExposureSettings

        return ExposureSettings(
            self.awrf_weights,
            self.awrf_p,
            self.exposure_target,
            self.protected_group,
            self.cut_step,
            self.threshold,
            form=self.exposure_form,
        )

    def validate(self) -> None:
        """Each setting by its declaration's one check (a :class:`core.errors.FieldError` naming it), then the preset
        and the measures."""
        for option in REPORT_OPTIONS.values():
            if option.kind == "file":
                continue
            try:
                option.check(getattr(self, option.setting))
            except OptionError as exc:
                raise FieldError(exc.field, exc.problem) from None
        self.resolved()
        parse_measures(self.measures)


#: The settings a report takes when given none (a frozen value, safe as a default argument).
DEFAULT_REPORT_SETTINGS = ReportSettings()


class ReportInputs(TypedDict, total=False):
    """What a report may take besides its query set, runs and settings."""

    wordlist: GenderWords | None  #: gender-definitional words for RaB/ARaB (default: the 32+32)
    representative: GenderWords | None  #: representative words for NFaiRR/TExFAIR (default: 163+163)
    background: Run | None  #: NFaiRR's background run (default: the collection)
    baseline: Run | None  #: run the others are tested against
    qrels: Qrels | None  #: relevance judgments: adds the effectiveness measures (default RR@10, nDCG@10, R@10, P@10)
    job: Job | None  #: progress record to update
    bar: bool  #: a terminal progress bar
    label_batch: object | None  #: annotation batch: a report on its labels (:func:`build_batch_report`)


def parse_cutoffs(text: str, option: ReportOption = CUTOFFS_OPTION) -> tuple[int, ...]:
    """``"5,10,20"`` → ``(5, 10, 20)`` by the cutoffs' declaration (empty: its default), or a
    :class:`core.errors.FieldError` naming ``cutoffs``."""
    try:
        return tuple(option.parse(text))
    except OptionError as exc:
        raise FieldError(exc.field, exc.problem) from None


def parse_measures(measures: str | Sequence[str]) -> tuple[str, ...]:
    """``"MRR@10,nDCG@10"`` → ``("RR@10", "nDCG@10")`` (ir_measures names), or ServiceError naming the bad one."""
    try:
        return parse(measures)
    except ValueError as exc:
        raise ServiceError(str(exc)) from None
