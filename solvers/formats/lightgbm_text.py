"""LightGBM's own text model read back (``lightgbm.Booster(model_str=...)``), without torch: the gbdt score model
(:mod:`solvers.models.gbdt.model`) and the API's ONNX export (:mod:`app.onnx_models.export`) share it."""
from __future__ import annotations


def load_booster(text: bytes, n_features: int):
    """A ``lightgbm.Booster`` from its text model (None for an empty text); ValueError when the text is not a
    LightGBM model of ``n_features`` features."""
    if not text:
        return None
    import lightgbm as lgb

    try:
        booster = lgb.Booster(model_str=text.decode())
    except (UnicodeDecodeError, lgb.basic.LightGBMError) as exc:
        raise ValueError(f"not a LightGBM text model: {str(exc)[:200]}") from None
    if booster.num_feature() != n_features:
        raise ValueError(f"the trees read {booster.num_feature()} features, the model {n_features}")
    return booster
