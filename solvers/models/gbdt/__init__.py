"""Gradient-boosted trees (model type ``gbdt``) on LightGBM: the score model (:mod:`.model`)."""
from .model import GBDTModel, gbdt, lightgbm_params

__all__ = ["GBDTModel", "gbdt", "lightgbm_params"]
