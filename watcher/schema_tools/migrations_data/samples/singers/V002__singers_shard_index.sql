-- The index the poll reads: (ShardId, LastUpdated), NULL_FILTERED so that rows whose ShardId
-- or LastUpdated is NULL (processed, or pruned by the maintenance job) are not in it. The
-- watcher uses it with
--   FixedShardProvider("ShardId", range(-18, 19)) and table_hint "@{FORCE_INDEX=Idx_Singers_ShardId_LastUpdated}".
CREATE NULL_FILTERED INDEX Idx_Singers_ShardId_LastUpdated ON Singers (ShardId, LastUpdated);
