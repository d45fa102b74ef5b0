"""One settings class, read from the environment (pydantic-settings).

Embedded defaults need no other software: a SQLite database and Celery over its
SQLAlchemy transport on a SQLite file, both under ``FAIRSOLVE_HOME``.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(extra="ignore")

    home: Path = Field(Path(".fairsolve"), validation_alias="FAIRSOLVE_HOME",
                       description="Directory for the embedded database, broker and stored files.")
    storage_url: str | None = Field(None, pattern=r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/[^\s]*)?$",
                                    validation_alias="FAIRSOLVE_STORAGE_URL",
                                    description="Where datasets, artifacts, checkpoints and audit models are stored: "
                                    "unset, the directory storage/ under home (embedded default); "
                                    "``s3://bucket/prefix``, S3-compatible object storage that every API and worker "
                                    "host reaches (credentials from the AWS_* variables; app.core.blobstore).")
    s3_endpoint_url: str | None = Field(None, validation_alias="FAIRSOLVE_S3_ENDPOINT_URL",
                                        description="The object store's HTTP endpoint (MinIO, Ceph, ...); AWS when "
                                        "unset (or AWS_ENDPOINT_URL).")
    cache_max_bytes: int = Field(8 << 30, ge=0, validation_alias="FAIRSOLVE_CACHE_MAX_BYTES",
                                 description="Bound of the local read-through cache of objects (datasets, artifacts, "
                                 "checkpoints) under home with object storage; least recently used files go first. "
                                 "A file read now is kept even when it alone is larger.")
    database_url_env: str | None = Field(None, validation_alias="DATABASE_URL",
                                         description="SQLAlchemy URL; SQLite under home when unset.")
    db_pool_size: int = Field(20, ge=1, validation_alias="FAIRSOLVE_DB_POOL_SIZE",
                              description="Database connections a process keeps open (server databases). An API "
                              "request holds one only while its route runs and until its session is closed; a "
                              "process whose connections all stay busy for 30 s answers 503 with Retry-After.")
    db_max_overflow: int = Field(10, ge=0, validation_alias="FAIRSOLVE_DB_MAX_OVERFLOW",
                                 description="Connections opened beyond the pool at a peak, closed once returned.")
    broker_url_env: str | None = Field(None, validation_alias=AliasChoices("CELERY_BROKER_URL", "BROKER_URL"),
                                       description="Celery broker URL; SQLAlchemy transport on SQLite when unset.")
    port: int = Field(8000, validation_alias="PORT")
    host: str = Field("127.0.0.1", validation_alias="HOST")
    api_workers: int = Field(1, ge=1, le=64, validation_alias="FAIRSOLVE_API_WORKERS",
                             description="API server processes (``python -m app.serve``). One process answers on "
                             "one core (Python's GIL); /metrics adds up the counts of all of them.")
    api_threads: int = Field(6, ge=1, le=256, validation_alias="FAIRSOLVE_API_THREADS",
                             description="Threads answering requests in each API process. More only contend for "
                             "the GIL: 40 (the default of Starlette's pool) cost 5.4 ms of CPU per request under "
                             "load where 6 cost 4.3.")
    upload_threads: int = Field(2, ge=1, le=64, validation_alias="FAIRSOLVE_UPLOAD_THREADS",
                                description="Uploads stored and profiled at once in each API process (a large one "
                                "takes seconds); more wait their turn without holding up other requests.")
    max_upload_bytes: int = Field(1 << 30, validation_alias="FAIRSOLVE_MAX_UPLOAD_BYTES",
                                  description="Largest accepted dataset upload, in bytes.")
    max_body_bytes: int = Field(2 << 20, ge=1024, le=1 << 30, validation_alias="FAIRSOLVE_MAX_BODY_BYTES",
                                description="Largest accepted request body that is not a multipart upload (JSON "
                                            "bodies, forms), in bytes.")
    trajectory_flush_s: float = Field(1.0, validation_alias="FAIRSOLVE_TRAJECTORY_FLUSH_S",
                                      description="Seconds between batched trajectory writes of a running job.")
    exact_trace_every: int = Field(25, ge=0, validation_alias="FAIRSOLVE_EXACT_TRACE_EVERY",
                                   description="Every this many iterations (and at the first and last) a job's "
                                   "trajectory also stores each constraint's exact metric on the train and "
                                   "validation splits, drawn beside the surrogate; skipped while it would take "
                                   "over 10 % of the solve's time (0: never).")
    trajectory_flush_rows: int = Field(1000, validation_alias="FAIRSOLVE_TRAJECTORY_FLUSH_ROWS",
                                       description="Buffered trajectory rows that force a write.")

    stale_after_s: float = Field(120.0, validation_alias="FAIRSOLVE_STALE_AFTER_S",
                                 description="A running job whose heartbeat is older than this is re-queued.")
    max_attempts: int = Field(3, validation_alias="FAIRSOLVE_MAX_ATTEMPTS",
                              description="Starts of a job before a lost worker fails it.")
    resend_every_s: float = Field(30.0, gt=0, validation_alias="FAIRSOLVE_RESEND_EVERY_S",
                                  description="How often Celery beat looks for queued jobs whose message is in "
                                  "no queue of the broker (a send that failed, a broker restarted without its data).")
    resend_grace_s: float = Field(60.0, gt=0, validation_alias="FAIRSOLVE_RESEND_GRACE_S",
                                  description="A queued job's message is looked for only this long after it was "
                                  "committed for sending (the time a send takes, with margin).")
    reap_every_s: float = Field(30.0, validation_alias="FAIRSOLVE_REAP_EVERY_S",
                                description="How often Celery beat looks for jobs whose worker vanished.")

    bootstrap_api_key: str | None = Field(None, validation_alias="FAIRSOLVE_BOOTSTRAP_API_KEY",
                                         description="An admin API key registered at start-up (hashed).")
    bootstrap_owner: str = Field("admin", validation_alias="FAIRSOLVE_BOOTSTRAP_OWNER",
                                 description="The owner of the bootstrap key.")
    auth_cache_s: float = Field(2.0, ge=0, validation_alias="FAIRSOLVE_AUTH_CACHE_S",
                                description="Seconds an API process reuses a key's successful lookup (0: every "
                                "request reads the key). A key revoked through another process still works "
                                "here for at most this long; revoked through this one, it stops at once.")
    session_ttl_s: float = Field(12 * 3600.0, gt=0, le=30 * 24 * 3600.0, validation_alias="FAIRSOLVE_SESSION_TTL_S",
                                 description="Seconds a dashboard sign-in lasts; sign-out, or revoking its key, "
                                 "ends it sooner.")
    rate_limit_per_s: float = Field(50.0, validation_alias="FAIRSOLVE_RATE_LIMIT_PER_S",
                                    description="Sustained requests per second per API key (0: no limit), in each "
                                    "API process: a key's connections to ``api_workers`` processes get up to that "
                                    "many times this rate in all.")
    rate_limit_burst: float = Field(200.0, validation_alias="FAIRSOLVE_RATE_LIMIT_BURST",
                                    description="Requests an idle API key may send at once.")
    max_active_jobs: int = Field(1000, validation_alias="FAIRSOLVE_MAX_ACTIVE_JOBS",
                                 description="Queued, waiting and running jobs one owner may have at once.")
    max_iterations_cap: int = Field(10_000_000, validation_alias="FAIRSOLVE_MAX_ITERATIONS_CAP",
                                    description="Largest max_iterations a job may ask for.")
    time_limit_cap_s: float = Field(24 * 3600.0, validation_alias="FAIRSOLVE_TIME_LIMIT_CAP_S",
                                    description="Largest time_limit_s a job may ask for.")
    max_upload_rows: int = Field(50_000_000, validation_alias="FAIRSOLVE_MAX_UPLOAD_ROWS",
                                 description="Most rows an uploaded table may have.")
    max_upload_columns: int = Field(2000, validation_alias="FAIRSOLVE_MAX_UPLOAD_COLUMNS",
                                    description="Most columns an uploaded table may have.")
    max_onnx_bytes: int = Field(64 << 20, ge=1, validation_alias="FAIRSOLVE_MAX_ONNX_BYTES",
                                description="Largest uploaded ONNX model, in bytes (checked before it is parsed).")

    log_format: str = Field("json", validation_alias="FAIRSOLVE_LOG_FORMAT", pattern="^(json|text)$",
                            description="Log lines as JSON objects (json) or plain text (text).")
    log_level: str = Field("INFO", validation_alias="FAIRSOLVE_LOG_LEVEL")

    audit_sources_env: str = Field("", validation_alias="FAIRSOLVE_AUDIT_SOURCES",
                                   description="Comma-separated directories and URL prefixes audits may read "
                                   "`source` data from (empty: sources are refused).")
    audit_trigger_every_s: float = Field(15.0, validation_alias="FAIRSOLVE_AUDIT_TRIGGER_EVERY_S",
                                         description="How often Celery beat looks for due audits.")
    audit_webhook_retries: int = Field(5, validation_alias="FAIRSOLVE_AUDIT_WEBHOOK_RETRIES",
                                       description="Retries of a failed alert webhook POST (after the first try).")
    audit_webhook_backoff_s: int = Field(2, validation_alias="FAIRSOLVE_AUDIT_WEBHOOK_BACKOFF_S",
                                         description="First retry delay of a webhook; doubles each retry (max 600 s).")

    audit_time_limit_s: float = Field(300.0, gt=0, validation_alias="FAIRSOLVE_AUDIT_TIME_LIMIT_S",
                                      description="Wall-clock limit of one audit run's computation (a child "
                                      "process, killed when it passes it; the run fails naming the limit).")
    audit_memory_bytes: int = Field(2 << 30, gt=0, validation_alias="FAIRSOLVE_AUDIT_MEMORY_BYTES",
                                    description="Address space one audit run's computation may add to its "
                                    "worker's (RLIMIT_AS of the child process).")
    audit_max_groups: int = Field(1000, ge=1, le=10_000, validation_alias="FAIRSOLVE_AUDIT_MAX_GROUPS",
                                  description="Most groups an audit run's data may have (checked before metrics).")
    audit_max_work: float = Field(2e10, gt=0, validation_alias="FAIRSOLVE_AUDIT_MAX_WORK",
                                  description="Most row evaluations of one run's metrics: metrics × (bootstrap "
                                  "resamples + 1) × (rows + 100 × groups), checked before they are computed.")
    audit_max_onnx_ops: float = Field(1e11, gt=0, validation_alias="FAIRSOLVE_AUDIT_MAX_ONNX_OPS",
                                      description="Most multiply-adds and copied elements an ONNX model may spend "
                                      "on one run's rows (its per-row cost from shape inference × rows).")
    onnx_max_tensor_bytes: int = Field(256 << 20, gt=0, validation_alias="FAIRSOLVE_ONNX_MAX_TENSOR_BYTES",
                                       description="Largest tensor an uploaded ONNX graph may make on one block of "
                                       "rows (shape inference with N = the block size).")
    onnx_max_block_ops: float = Field(5e10, gt=0, validation_alias="FAIRSOLVE_ONNX_MAX_BLOCK_OPS",
                                      description="Most multiply-adds and copied elements of an uploaded ONNX graph "
                                      "on one block of rows (MatMul, Gemm, Concat, Expand, Tile).")
    max_active_audit_runs: int = Field(4, ge=1, validation_alias="FAIRSOLVE_MAX_ACTIVE_AUDIT_RUNS",
                                       description="Queued and running audit runs one owner may have at once: "
                                       "'run now' answers 429 beyond it and a due audit waits for a later tick.")

    @property
    def audit_sources(self) -> list[str]:
        return [s.strip() for s in self.audit_sources_env.split(",") if s.strip()]

    checkpoint_every_s: float = Field(30.0, validation_alias="FAIRSOLVE_CHECKPOINT_EVERY_S",
                                      description="Seconds between checkpoints of a running solve (model and "
                                                  "solver state); a redelivered job resumes from the last one.")

    tmp_stale_s: float = Field(3600.0, ge=0, validation_alias="FAIRSOLVE_TMP_STALE_S",
                               description="At start the API deletes files in storage/tmp unchanged for this "
                                           "long: partial uploads of a process that crashed. Files written "
                                           "since are kept (another process may be writing them).")

    broker_key_prefix: str = Field("", validation_alias="FAIRSOLVE_BROKER_KEY_PREFIX", max_length=64,
                                   description="Prefix of every Redis key the broker uses, so several FairSolve "
                                               "deployments can share one Redis database.")

    webhook_allow_private: bool = Field(False, validation_alias="FAIRSOLVE_WEBHOOK_ALLOW_PRIVATE",
                                        description="Let alert webhooks reach private, loopback and link-local "
                                                    "addresses (refused by default).")

    prepared_cache_bytes: int = Field(256 << 20, ge=0, validation_alias="FAIRSOLVE_PREPARED_CACHE_BYTES",
                                      description="Per worker process: bound of the prepared tables (split, fitted "
                                      "encoder, encoded X) kept for the next job on the same dataset and split "
                                      "(solvers.data.prepared_cache); 0 keeps none.")
    table_cache_bytes: int = Field(1 << 30, ge=0, validation_alias="FAIRSOLVE_TABLE_CACHE_BYTES",
                                   description="Per worker process: bound of the tables kept read in memory for the "
                                   "next job or audit on the same file (app.datasets.storage.load_table); least "
                                   "recently used first; a table larger than it alone is read each time.")
    columnar_cache_bytes: int = Field(4 << 30, ge=0, validation_alias="FAIRSOLVE_COLUMNAR_CACHE_BYTES",
                                      description="Bound of the columnar copies of tables as the workers read them "
                                      "(app.datasets.columnar), under the storage folder; least recently used "
                                      "first; 0 keeps none (every job parses its upload).")
    worker_nice: int = Field(10, ge=0, le=19, validation_alias="FAIRSOLVE_WORKER_NICE",
                             description="Niceness added to solver processes, so a shared machine answers API "
                                         "requests before it trains.")

    @property
    def database_url(self) -> str:
        return self.database_url_env or f"sqlite:///{(self.home / 'fairsolve.db').resolve()}"

    @property
    def broker_url(self) -> str:
        """The embedded default is kombu's SQLAlchemy transport on a SQLite file with a doorbell: an idle worker
        wakes when a message is committed instead of at its next poll (``app.core.broker_bell``)."""
        return self.broker_url_env or f"sqlabell+sqlite:///{(self.home / 'broker.db').resolve()}"

    @property
    def broker_transport_options(self) -> dict:
        """Redis redelivers an unacknowledged task after ``visibility_timeout``; the SQLAlchemy
        transport hands its options to ``create_engine``, so it gets none."""
        if self.broker_url.startswith(("sqla+", "sqlabell+")):
            return {}
        options: dict = {"visibility_timeout": 6 * 3600}
        if self.broker_key_prefix:
            options["global_keyprefix"] = self.broker_key_prefix
        return options

    @property
    def storage_dir(self) -> Path:
        return (self.home / "storage").resolve()

    def ensure_dirs(self) -> None:
        for sub in ("datasets", "artifacts", "tmp"):
            (self.storage_dir / sub).mkdir(parents=True, exist_ok=True)


@lru_cache
def get_settings() -> Settings:
    settings = Settings()
    settings.ensure_dirs()
    return settings
