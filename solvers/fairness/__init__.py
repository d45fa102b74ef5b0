"""Keeping the user's fairness promise: exact constraint values (:mod:`.exact`), confidence intervals and
upper bounds (:mod:`.confidence`), the per-constraint report and warnings of a job (:mod:`.report`),
enforcement of the exact constraint after a surrogate solve (:mod:`.enforce`) and the high-confidence
(Seldonian) guarantee (:mod:`.guarantee`)."""
