"""Spark-side plumbing: the session, what differs under Spark Connect, what a cluster's executors need, and the
package's JVM functions.
"""
