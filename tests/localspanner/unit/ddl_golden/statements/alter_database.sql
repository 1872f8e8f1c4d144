alter database `my-db` set options (default_leader = 'us-central1', VERSION_RETENTION_PERIOD = null)
