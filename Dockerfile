# FairSolve image: API, Celery worker and beat share it (the command differs).
# CPU by default; `--build-arg BASE=nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04 --build-arg TORCH_INDEX=cu128`
# builds a CUDA image for the gpu worker.
ARG BASE=python:3.11-slim-bookworm
FROM ${BASE}
ARG TORCH_INDEX=cpu
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 FAIRSOLVE_HOME=/data
RUN if ! command -v python3 >/dev/null; then \
      apt-get update && apt-get install -y --no-install-recommends python3 python3-venv python3-pip \
      && rm -rf /var/lib/apt/lists/*; fi
# LightGBM's wheel links the system OpenMP runtime (libgomp), which slim images lack
RUN apt-get update && apt-get install -y --no-install-recommends libgomp1 && rm -rf /var/lib/apt/lists/*
WORKDIR /srv/fairsolve
COPY requirements.txt .
RUN python3 -m venv /opt/venv \
 && /opt/venv/bin/pip install --no-cache-dir --extra-index-url https://download.pytorch.org/whl/${TORCH_INDEX} \
      -r requirements.txt
ENV PATH=/opt/venv/bin:$PATH
COPY alembic.ini ./
COPY app ./app
COPY worker ./worker
COPY solvers ./solvers
COPY migrations ./migrations
RUN useradd --create-home --uid 10001 fairsolve && mkdir -p /data && chown fairsolve /data
USER fairsolve
EXPOSE 8000
HEALTHCHECK --interval=15s --timeout=3s --retries=5 \
  CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz')" || exit 1
CMD ["sh", "-c", "alembic upgrade head && HOST=0.0.0.0 PORT=8000 exec python -m app.serve"]
