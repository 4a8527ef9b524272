-- Feeds runs_by_id from every block inserted into samples, as runs_mv
-- feeds runs.
CREATE MATERIALIZED VIEW IF NOT EXISTS {{.Name "runs_by_id_mv"}}{{.OnCluster}} TO {{.Local "runs_by_id"}} AS
{{template "runs from" (.Reading (.Local "samples"))}}
