"""The batch page's "Publish dataset" form: the license (the researcher's choice, no default) and the opt-in judgments."""

from django import forms

from publishing.hub_card import HUB_LICENSES


class PublishDatasetForm(forms.Form):
    license = forms.ChoiceField(
        choices=[("", "choose a license"), *((name, name) for name in HUB_LICENSES)],
        help_text="The Hub's license identifier; the queries' text keeps its source's terms.",
    )
    license_name = forms.CharField(
        required=False,
        max_length=64,
        label="License name (license other only)",
        help_text="The Hub's license_name, e.g. my-license-1.0.",
    )
    license_link = forms.CharField(
        required=False,
        max_length=500,
        label="License link (license other only)",
        help_text="The Hub's license_link: a URL of the terms, or a file you add to the folder (LICENSE).",
    )
    with_judgments = forms.BooleanField(
        required=False,
        label="Include every judgment",
        help_text="Under pseudonyms made for this dataset (annotator-001, ...); off unless you choose it.",
    )
