"""Reads of what a batch's answers add up to, one module per concept (import the module that defines a name):

- :mod:`.labels` -- the usable judgments, :class:`~.labels.BatchAnswers`, each query's label and where it comes
  from, the per-query results, and the key the ``results`` cache keeps them under;
- :mod:`.cache` -- the ``results`` cache itself (:func:`~.cache.remembered`);
- :mod:`.agreement` -- the agreement report and the agreement page's set-aside table;
- :mod:`.gold` -- what label sensitivity and the crowd model read besides the usable judgments (gold, rulings);
- :mod:`.state` -- a batch's state, the one reading behind every page that shows it.

The review queue, which reads these, is :mod:`annotation.quality.selectors`.
"""
