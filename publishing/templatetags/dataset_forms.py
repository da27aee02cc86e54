"""``{% publish_dataset_form batch %}``: the batch page's "Publish dataset" form, with its own fresh form."""

from django import template

from publishing.forms import PublishDatasetForm

register = template.Library()


@register.inclusion_tag("annotation/_publish_dataset_form.html", takes_context=True)
def publish_dataset_form(context, batch):
    return {"batch": batch, "form": PublishDatasetForm(), "csrf_token": context.get("csrf_token")}
