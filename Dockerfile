# The image of every component: `ptol operator`, `ptol webhook` (see config/manager).
# An exact Python release on an exact Debian release, so a rebuild runs what was tested; move it on
# deliberately (for security fixes too) and rebuild.
ARG BASE_IMAGE=python:3.11.13-slim-bookworm
FROM ${BASE_IMAGE} AS build
WORKDIR /src
COPY pyproject.toml README.md LICENSE constraints.txt ./
COPY preemption_toleration ./preemption_toleration
# the project and every dependency as wheels, at the versions of constraints.txt (scripts/lock.sh)
RUN pip wheel --no-cache-dir --constraint constraints.txt --wheel-dir /wheels .

FROM ${BASE_IMAGE}
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --no-index --find-links /wheels preemption-toleration && rm -rf /wheels
# non-root, matching runAsUser in config/manager; the root filesystem is mounted read-only there
USER 65532:65532
ENV PYTHONUNBUFFERED=1
ENTRYPOINT ["ptol"]
