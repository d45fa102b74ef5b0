"""Celery app and tasks: run a job, persist its trajectory in batches, honour cancellation."""
