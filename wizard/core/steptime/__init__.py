"""How long a verl step takes before the run starts: seconds per phase, each from terms a reader can follow
(``predict``), calibrated on real runs measured alone on an H200."""

from wizard.core.face import face

__getattr__, __all__ = face(__name__, {
    "CALIBRATION": "predict",
    "Calibration": "predict",
    "PROMPT_TOKENS": "predict",
    "RESPONSE_TOKENS": "predict",
    "PhaseTime": "predict",
    "StepTime": "predict",
    "TimeTerm": "predict",
    "predict_step": "predict",
})
