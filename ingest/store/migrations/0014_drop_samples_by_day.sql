DROP TABLE IF EXISTS samples_by_day
