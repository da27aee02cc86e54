"""Services of the publishing app: the dataset folder (:mod:`.dataset`), the paper bundle (:mod:`.paper`,
which declares the ``metrics.paper`` background job: the job discovery imports this package) and the Zenodo
deposit (:mod:`.deposits`)."""

from publishing.services import dataset, deposits, paper  # noqa: F401  (their jobs are declared on import)
