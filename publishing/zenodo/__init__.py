"""A Zenodo deposit of a published dataset folder or a paper bundle: its ``.zenodo.json`` metadata
(:mod:`publishing.zenodo.metadata`) and its upload through Zenodo's REST API
(:mod:`publishing.zenodo.deposit`)."""
