# syntax=docker/dockerfile:1
#
# Spark standalone master and worker for the compose stack (both services use this image;
# compose.yaml chooses the process). Build from the repository root:
#
#   docker build -f docker/spark.Dockerfile -t connect-plane-spark .
#
# Why not apache/spark: the Airflow container is the Spark driver (client mode) and runs
# PySpark 4.2 on Python 3.11 (constraints.txt). Executors must run the same Spark version
# and the same Python minor version (PySpark refuses a mismatch), and their Python workers
# import pyarrow, confluent-kafka and spark_kafka_source (the Kafka data source). The
# official apache/spark images ship Ubuntu's Python 3.10 and none of those packages, so this
# image runs Spark from the pinned pyspark wheel (it bundles the jars and bin/spark-class).
#
# Java: the same JRE as docker/airflow.Dockerfile's (the driver), copied from the Eclipse
# Temurin image of one Java major (Spark 4 runs on 17 or 21).
FROM eclipse-temurin:17-jre AS java

FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore

COPY --from=java /opt/java/openjdk /opt/java/openjdk
ENV JAVA_HOME=/opt/java/openjdk \
    PATH="/opt/java/openjdk/bin:${PATH}"
# Spark's launch scripts need ps (procps).
RUN apt-get update \
    && apt-get install -y --no-install-recommends procps \
    && apt-get clean \
    && rm -rf /var/lib/apt/lists/*

# connect-plane (worker dependencies include confluent-kafka) and the Spark extra's
# pyspark/pyarrow/pandas — not the Airflow packages of that extra.
WORKDIR /opt/connect-plane
COPY pyproject.toml constraints.txt README.md ./
COPY worker/ ./worker/
COPY airflow_provider/ ./airflow_provider/
COPY spark_kafka_source/ ./spark_kafka_source/
RUN pip install -c constraints.txt . pyspark pyarrow pandas \
    && pip check \
    && rm -rf build ./*.egg-info

# Same uid/gid as the airflow user (50000:0): executors write job output into the shared
# pipeline-output volume and the driver in the Airflow container commits it (renames).
RUN useradd --uid 50000 --gid 0 --create-home --home-dir /home/spark spark \
    && mkdir -p /opt/spark/work /data/output \
    && chown -R spark:root /opt/spark /data/output
USER spark
WORKDIR /home/spark

# Executors start `python3` (the driver passes PYSPARK_PYTHON=python3): this image's 3.11.
ENV PYSPARK_PYTHON=python3 \
    SPARK_WORKER_DIR=/opt/spark/work

EXPOSE 7077 8080 8081
CMD ["spark-class", "org.apache.spark.deploy.master.Master"]
