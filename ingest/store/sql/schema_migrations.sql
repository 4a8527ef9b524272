CREATE TABLE IF NOT EXISTS schema_migrations
(
    version    UInt32,
    name       String,
    applied_at DateTime('UTC')
)
ENGINE = MergeTree
ORDER BY version
