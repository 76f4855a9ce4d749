# syntax=docker/dockerfile:1
#
# Airflow 3.3 with the connect-plane provider (kafka_connect connection, operators,
# sensors, triggers), the PySpark data source and the Spark provider, plus a JRE so that
# SparkSubmitOperator can run spark-submit (the driver runs in this container, in client
# mode, against the spark-master service). Build from the repository root:
#
#   docker build -f docker/airflow.Dockerfile -t connect-plane-airflow .
#
# Java for spark-submit: the same JRE as docker/spark.Dockerfile's, copied from the
# Eclipse Temurin image of one Java major (Spark 4 runs on 17 or 21), so that the driver
# here and the executors there run the same Java whatever Debian release each base uses.
FROM eclipse-temurin:17-jre AS java

FROM apache/airflow:3.3.2-python3.11

# /data/output is the pipeline-output volume shared with the Spark workers; the directory
# is created here so the volume starts out owned by airflow (uid 50000, gid 0), the uid
# the Spark image's user has too.
USER root
COPY --from=java /opt/java/openjdk /opt/java/openjdk
RUN mkdir -p /opt/connect-plane /data/output \
    && chown airflow:root /opt/connect-plane /data/output
ENV JAVA_HOME=/opt/java/openjdk \
    PATH="/opt/java/openjdk/bin:${PATH}"
USER airflow

# The image's packages stay as they are: everything already installed (Airflow and its
# dependencies, at the versions of the image's own constraints) is held at its installed
# version (pip freeze -> /tmp/image.txt); packages new to the image come at the versions
# of the project's constraints.txt (/tmp/new.txt). If connect-plane's ranges do not admit
# what the image has, pip's resolver fails the build -- it never up- or downgrades the
# image's packages -- and `pip check` fails it on any inconsistency left.
WORKDIR /opt/connect-plane
COPY --chown=airflow:root pyproject.toml constraints.txt README.md ./
COPY --chown=airflow:root worker/ ./worker/
COPY --chown=airflow:root airflow_provider/ ./airflow_provider/
COPY --chown=airflow:root spark_kafka_source/ ./spark_kafka_source/
RUN pip freeze --all | grep -E '^[A-Za-z0-9._-]+==' > /tmp/image.txt \
    && awk -F'==' 'function norm(n) { n = tolower(n); gsub(/[-_.]+/, "-", n); return n } \
         NR == FNR { have[norm($1)] = 1; next } \
         /^[A-Za-z0-9]/ && !(norm($1) in have)' /tmp/image.txt constraints.txt > /tmp/new.txt \
    && pip install --no-cache-dir -c /tmp/image.txt -c /tmp/new.txt ".[airflow,spark]" \
    && pip check \
    && rm -rf build ./*.egg-info /tmp/image.txt /tmp/new.txt
WORKDIR /opt/airflow
