"""The analytical model: separate term functions, one batch path, one typed `Prediction`."""
from .figures import Figures  # noqa: F401
from .predict import Prediction, PredictionBatch, Problem, predict, predict_batch  # noqa: F401
