"""How long a verl step takes before the run starts: seconds per phase, each from terms a reader can follow
(``predict``), calibrated on real runs measured alone on an H200."""

from wizard.core.face import face

__getattr__, __all__ = face(__name__, {
    "CALIBRATION": "terms",
    "Calibration": "terms",
    "PROMPT_TOKENS": "terms",
    "RESPONSE_TOKENS": "terms",
    "PhaseTime": "terms",
    "StepTime": "terms",
    "TimeTerm": "terms",
    "predict_step": "predict",
})
