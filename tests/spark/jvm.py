"""The JVM options of the Spark JVMs the tests start: C1 only and the serial GC.

Test jobs are small and short: most of their JVM's CPU goes to C2's compiler threads and the
parallel GC's, not to the job. With C1 alone and one GC thread, the README's example job
(examples/spark_key_counts.py on local[2]) took 19 s of JVM CPU instead of 32-42 s on this
2-core machine. The options change how fast a job runs, never what it does.

`SPARK_SUBMIT_OPTS` (read by spark-submit, which pyspark runs to start a driver) carries them to
a driver JVM, `spark.executor.extraJavaOptions` to a standalone cluster's executors, and
`SPARK_DAEMON_JAVA_OPTS` to its master and workers. Plain constants: tests/spark/eo_job.py and
tests/integration/test_cli_readme.py import them without pytest or pyspark.
"""

SPARK_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
DRIVER_ENV = "SPARK_SUBMIT_OPTS"
DAEMON_ENV = "SPARK_DAEMON_JAVA_OPTS"
EXECUTOR_CONF = {"spark.executor.extraJavaOptions": SPARK_JVM_OPTIONS}
