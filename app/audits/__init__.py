"""Scheduled batch audits: re-check a trained model (or a prediction log) on fresh data against metric thresholds.

* :mod:`app.audits.metrics` — the registry of exact metrics an audit can check, their spec
  validation and the confidence intervals (exact Clopper–Pearson for the rate gaps, bootstrap otherwise);
* :mod:`app.audits.model` — a job's model with its own preprocessing, applied to a table;
* :mod:`app.audits.logs` — prediction logs: a table that already holds a model's scores or decisions;
* :mod:`app.audits.drift` — per-group score summaries of a run, KS and PSI against a reference run;
* :mod:`app.audits.bias_report` — the bias report (one document; JSON, CSV and self-contained HTML);
* :mod:`app.audits.sources` — where audit data comes from (a dataset, or an allow-listed path / URL);
* :mod:`app.audits.schedule` — cron schedules (UTC);
* :mod:`app.audits.report` — one audit run's report: values, CIs, pass/fail, drift, the table;
* :mod:`app.audits.schemas` — request and response bodies of ``/api/v1/audits`` and ``/api/v1/alerts``.

A run's lifecycle (beat trigger, start and fencing, the run, its report and alert, the webhook) is
:mod:`app.audits.lifecycle`, its computation :mod:`app.audits.compute`; the Celery tasks are :mod:`worker.audits`.
"""
