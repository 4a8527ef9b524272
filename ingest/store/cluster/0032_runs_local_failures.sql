-- The runs' failed requests apart; see migrations/0044.
ALTER TABLE /*DATABASE*/.runs_local ON CLUSTER /*CLUSTER*/
    ADD COLUMN failed_wants Array(Enum8('unknown' = 0, 'h1' = 1, 'h2' = 2, 'h3' = 3)) DEFAULT arrayFilter((w, e) -> e != '', wants, errors) AFTER errors,
    ADD COLUMN failed_errors Array(String) DEFAULT arrayFilter(e -> e != '', errors) AFTER failed_wants
