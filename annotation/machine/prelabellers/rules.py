"""The rules pre-labeller: the study's gender-definitional words, no network.

A query is tokenised like the study counts words (:func:`genderbias.text.tokenize.tokenize`) and
looked up in a word list (default: :func:`genderbias.text.wordlists.default_wordlist`, the words of
Rekabsaz & Schedl, SIGIR 2020), then in an optional first-name list: words of one gender give its
label, of both ``o``, none ``n``, each at its :data:`CONFIDENCE`. No first-name list ships by default
(docs/prelabelling.md, "The pre-labellers"); one can be passed in (``first_names=``, it changes ``model``).
``detail`` records the rule and the words that matched. Pure: no Django.
"""

from __future__ import annotations

from collections.abc import Sequence

from annotation.machine.prelabellers.interface import Prediction, PreLabeller, register
from genderbias.text.tokenize import tokenize
from genderbias.text.wordlists import GenderWords, default_wordlist

#: Bump when a rule or a confidence changes: stored pre-labels of another version are kept apart.
RULES_VERSION = "rules-v1"
CONFIDENCE = {
    "female_words": 0.9,
    "male_words": 0.9,
    "both_words": 0.8,
    "female_names": 0.7,
    "male_names": 0.7,
    "both_names": 0.7,
    "none": 0.6,
}
_LABEL = {"female": "f", "male": "m", "both": "o"}


def _side(tokens: set[str], words: GenderWords) -> tuple[str | None, list[str]]:
    female = sorted(tokens & words.female)
    male = sorted(tokens & words.male)
    if female and male:
        return "both", female + male
    if female:
        return "female", female
    if male:
        return "male", male
    return None, []


@register("rules")
class RulesPreLabeller(PreLabeller):
    prompt_version = RULES_VERSION

    def __init__(self, words: GenderWords | None = None, first_names: GenderWords | None = None) -> None:
        super().__init__()
        self.words = words or default_wordlist()
        self.first_names = first_names
        self.model = self.words.name + (f"+names:{first_names.name}" if first_names else "")

    def predict(self, text: str) -> Prediction:
        tokens = set(tokenize(text))
        for kind, words in (("words", self.words), ("names", self.first_names)):
            side, matched = _side(tokens, words) if words is not None else (None, [])
            if side:
                rule = f"{side}_{kind}"
                return Prediction(_LABEL[side], CONFIDENCE[rule], {"rule": rule, "matched": matched})
        return Prediction("n", CONFIDENCE["none"], {"rule": "none"})

    def label(self, queries: Sequence[tuple[str, str]]) -> list[Prediction]:
        return [self.predict(text) for _, text in queries]
