RENAME TABLE samples TO samples_by_day, samples_by_hour TO samples
