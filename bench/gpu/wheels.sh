#!/usr/bin/env bash
# Here (a machine with pip's index): the service's packages the lent GPU machine's image lacks, as CPython 3.12
# manylinux wheels in .whl/ (ignored by git), pinned as in requirements.txt. The image already holds torch, numpy,
# pandas, scikit-learn, SciPy, pyarrow, onnx, onnxruntime, safetensors, httpx, jinja2, tqdm and prometheus-client
# (the device tool's KINDS.md lists it). About 32 MiB. Then run bench/gpu/session.sh there (see its header).
set -euo pipefail
cd "$(dirname "$0")/../.."
grep -qxF '/.whl/' .git/info/exclude 2>/dev/null || { mkdir -p .git/info; echo '/.whl/' >> .git/info/exclude; }
pin() { grep -iE "^$1(\[[a-z]+\])?==" requirements.txt | head -1 | cut -d' ' -f1 | sed 's/\[[a-z]*\]//'; }
pins=()
for name in fastapi uvicorn httptools python-multipart pydantic pydantic-settings sqlalchemy alembic psycopg celery \
            kombu redis fairlearn lightgbm plotly swagger-ui-bundle-v2 cronsim; do
  pins+=("$(pin "$name")")
done
# their own dependencies that the image lacks (pinned as this project's environment resolved them)
pins+=(psycopg-binary==3.3.9 starlette==1.10.0 pydantic_core==2.46.4 annotated-types==0.8.0 typing-inspection==0.4.5
       python-dotenv==1.2.4 Mako==1.4.3 amqp==5.4.2 billiard==4.3.2 vine==5.1.0 click-didyoumean==0.3.1
       click-plugins==1.1.1.2 click-repl==0.4.1 prompt_toolkit==3.0.53 wcwidth==0.9.4 tzlocal==5.4.5 tzdata
       opentelemetry-api==1.45.2)
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 -d .whl "${pins[@]}"
du -sh .whl
