-- First contact's runs over h3 split by where the H3 origin's Alt-Svc
-- could have come from (samples.alt_svc, 0058): runs_first_h3_before
-- (nothing from the H3 origin on the page before, or that was already
-- over h3: known before the page) and runs_first_h3_page (the page's own
-- loads over TCP taught it, the script's among them). 0 for the hours
-- stored before, whose runs did not record it (alt_svc 0). The view is
-- made again to count them (migrations run before ingest starts), and in
-- cluster mode the Distributed table, which takes its structure when it
-- is created.
ALTER TABLE {{.Local "run_fact_counts"}}{{.OnCluster}}
    ADD COLUMN runs_first_h3_before UInt64 AFTER runs_never_h3,
    ADD COLUMN runs_first_h3_page UInt64 AFTER runs_first_h3_before;
{{- if .Cluster}}
DROP TABLE IF EXISTS {{.Name "run_fact_counts"}}{{.OnCluster}};
{{template "schema/distributed.sql" (.Over "run_fact_counts" "cityHash64(site, hour)")}};
{{- end}}
DROP TABLE IF EXISTS {{.Name "run_fact_counts_mv"}}{{.OnCluster}};
{{template "schema/run_fact_counts_mv.sql" .}}
