-- Copy every row; run again after an interruption it starts over.
TRUNCATE TABLE samples_by_hour;
INSERT INTO samples_by_hour SELECT * FROM samples
