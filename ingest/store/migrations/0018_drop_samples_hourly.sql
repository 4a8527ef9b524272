DROP TABLE IF EXISTS samples_hourly
