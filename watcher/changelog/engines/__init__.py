"""The engines that compute a changelog run: one interface (:mod:`.base`), the Spark engine (:mod:`.spark.engine`)."""
