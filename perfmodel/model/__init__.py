"""The analytical model: separate term functions, one batch path, one typed `Prediction`."""
from .predict import Prediction, predict, predict_batch, PredictionBatch  # noqa: F401
