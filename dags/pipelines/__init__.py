"""PySpark jobs that Airflow DAGs in ``dags/`` submit with ``SparkSubmitOperator``."""
