"""Pre-labellers: machines that label a batch's queries before (or beside) the crowd.

- :mod:`.base` -- the interface (:class:`PreLabeller`: ``label([(qid, text), ...])`` ->
  one :class:`Prediction` per query: a label and a confidence) and the registry;
- :mod:`.rules` -- the study's gender-definitional words (no network);
- :mod:`.openai_chat` -- any OpenAI-compatible chat-completions endpoint, k samples voted.

Like the crowd providers, pre-labellers never write to the database: the service
``annotation.machine.services.prelabels.prelabel_batch`` stores what they return (and gives the
chat labeller its database-backed answer cache).
"""

from annotation.machine.prelabellers.interface import (
    Prediction,
    PreLabelError,
    PreLabeller,
    get_prelabeller,
    prelabeller_names,
    register,
)

__all__ = ["PreLabelError", "PreLabeller", "Prediction", "get_prelabeller", "prelabeller_names", "register"]
