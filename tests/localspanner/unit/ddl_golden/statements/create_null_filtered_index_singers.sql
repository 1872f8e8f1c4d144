CREATE NULL_FILTERED INDEX Idx_Singers_ShardId_LastUpdated ON Singers (ShardId, LastUpdated)
