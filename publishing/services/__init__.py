"""Services of the publishing app: the dataset folder (:mod:`.dataset`) and the paper bundle (:mod:`.paper`,
which declares the ``metrics.paper`` background job: the job discovery imports this package)."""

from publishing.services import dataset, paper  # noqa: F401  (the paper bundle's job is declared on import)
