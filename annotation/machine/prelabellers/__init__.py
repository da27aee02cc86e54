"""Pre-labellers: machines that label a batch's queries before (or beside) the crowd. Like the crowd
providers, they never write to the database: ``annotation.machine.services.prelabels`` stores what they return.
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
