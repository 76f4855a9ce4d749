# syntax=docker/dockerfile:1
#
# Airflow 3.3 with the connect-plane provider (kafka_connect connection, operators,
# sensors, triggers), the PySpark data source and the Spark provider, plus a JRE so that
# SparkSubmitOperator can run spark-submit (the driver runs in this container, in client
# mode, against the spark-master service). Build from the repository root:
#
#   docker build -f docker/airflow.Dockerfile -t connect-plane-airflow .
FROM apache/airflow:3.3.2-python3.11

# spark-submit needs Java (Spark 4 runs on 17 or 21). default-jre-headless is 17 on the
# image's Debian bookworm and 21 on trixie, so this keeps building if the base image moves
# on. /data/output is the pipeline-output volume shared with the Spark workers; the
# directory is created here so the volume starts out owned by airflow (uid 50000, gid 0).
USER root
RUN apt-get update \
    && apt-get install -y --no-install-recommends default-jre-headless \
    && apt-get autoremove -yqq --purge \
    && apt-get clean \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /opt/connect-plane /data/output \
    && chown airflow:root /opt/connect-plane /data/output
USER airflow

# Pinned by the project's constraints.txt (which pins apache-airflow==3.3.2, the image's
# own version, so Airflow itself is left as it is).
WORKDIR /opt/connect-plane
COPY --chown=airflow:root pyproject.toml constraints.txt README.md ./
COPY --chown=airflow:root worker/ ./worker/
COPY --chown=airflow:root airflow_provider/ ./airflow_provider/
RUN pip install --no-cache-dir -c constraints.txt ".[airflow,spark]" \
    && rm -rf build ./*.egg-info
WORKDIR /opt/airflow
