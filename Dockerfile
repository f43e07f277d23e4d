# The image of every component: `ptol operator`, `ptol webhook` (see config/manager).
# An exact Python release on an exact Debian release, so a rebuild runs what was tested; move it on
# deliberately (for security fixes too) and rebuild. Any Debian bookworm with Python 3.11 and its venv
# module serves as a base: the test suite builds this file on a bookworm root filesystem with Debian's
# python3 (tests/image), since it cannot pull from a container registry.
ARG BASE_IMAGE=python:3.11.13-slim-bookworm
FROM ${BASE_IMAGE} AS build
# Optional: a package index and its CA bundle for the build, e.g. a mirror (not kept in the image).
ARG PIP_INDEX_URL
ARG PIP_CERT
WORKDIR /src
COPY pyproject.toml README.md LICENSE constraints.txt ./
COPY preemption_toleration ./preemption_toleration
# the project and every dependency in one virtual environment, at the versions of constraints.txt
# (scripts/lock.sh); the final stage copies it to the same path on the same base
RUN python3 -m venv /opt/ptol \
    && /opt/ptol/bin/pip install --no-cache-dir --no-compile --constraint constraints.txt . \
    && /opt/ptol/bin/python -m compileall -q /opt/ptol/lib

FROM ${BASE_IMAGE}
COPY --from=build /opt/ptol /opt/ptol
ENV PATH=/opt/ptol/bin:$PATH PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
# non-root, matching runAsUser in config/manager; the root filesystem is mounted read-only there
USER 65532:65532
ENTRYPOINT ["ptol"]
