-- The rollup keeps the outcome beside want and got, which determine it.
ALTER TABLE samples_hourly
    ADD COLUMN outcome Enum8('other' = 0, 'h2' = 1, 'h3' = 2, 'wanted_h3_got_h2' = 3)
    DEFAULT multiIf(want = 'h2' AND got = 'h2', 'h2',
                    want = 'h3' AND got = 'h3', 'h3',
                    want = 'h3' AND (got = 'h2' OR got = 'h1'), 'wanted_h3_got_h2',
                    'other')
    AFTER got
