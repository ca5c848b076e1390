"""Figures and reports (matplotlib, Agg backend). Views of Predictions and recorded runs only."""
