-- Writes 0044's columns into the rows stored before (a mutation: it works
-- in the background; until it is done they are computed on read, with the
-- same values). Running it again writes the same values.
ALTER TABLE {{.Local "runs"}}{{.OnCluster}} UPDATE failed_wants = arrayFilter((w, e) -> e != '', wants, errors), failed_errors = arrayFilter(e -> e != '', errors) WHERE 1
