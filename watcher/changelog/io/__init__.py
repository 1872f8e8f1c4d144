"""Filesystems of a job's folders: Hadoop's through the JVM, pyarrow's for sessions without a JVM, and the
staging batches Spark writes.
"""
