"""The batch page's "Publish dataset" form: the license (the researcher's choice, no default) and the opt-in judgments."""

from django import forms

from annotation.publication.hub_card import HUB_LICENSES


class PublishDatasetForm(forms.Form):
    license = forms.ChoiceField(
        choices=[("", "choose a license"), *((name, name) for name in HUB_LICENSES)],
        help_text="The Hub's license identifier; the queries' text keeps its source's terms.",
    )
    with_judgments = forms.BooleanField(
        required=False,
        label="Include every judgment",
        help_text="Under pseudonyms made for this dataset (annotator-001, ...); off unless you choose it.",
    )
