"""A local Spark session shared by the Spark integration tests (starting one takes ~10 s).

``local[2]``, two shuffle partitions, no UI, UTC session time, and this interpreter for
Spark's Python workers (they import pyarrow and this project). Without Java the tests are
skipped, not failed: Spark needs a JVM.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.support import NO_JAVA

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    # py4j logs "Closing down clientserver connection" from __del__ at interpreter exit,
    # after pytest has closed the captured streams ("Logging error" noise in CI output).
    logging.getLogger("py4j").setLevel(logging.WARNING)


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    if NO_JAVA:
        pytest.skip(NO_JAVA)
    from pyspark.sql import SparkSession

    # Both: the config covers executors' workers, the variable the driver-side planners.
    previous = os.environ.get("PYSPARK_PYTHON")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (SparkSession.builder.master("local[2]").appName("connect-plane-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.pyspark.python", sys.executable)
               .config("spark.pyspark.driver.python", sys.executable)
               .config("spark.sql.warehouse.dir", str(tmp_path_factory.mktemp("warehouse")))
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()
        if previous is None:
            os.environ.pop("PYSPARK_PYTHON", None)
        else:
            os.environ["PYSPARK_PYTHON"] = previous
