"""Services of the publishing app: the dataset folder (:mod:`.dataset`), the paper bundle (:mod:`.paper`,
which declares the ``metrics.paper`` background job) and the Zenodo deposit (:mod:`.deposits`, the
``annotation.zenodo_deposit`` job): the job discovery imports this package."""

from publishing.services import dataset, deposits, paper  # noqa: F401  (their jobs are declared on import)
