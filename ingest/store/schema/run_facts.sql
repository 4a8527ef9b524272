-- One row per browser run, whatever phase it reached, made by
-- run_facts_mv from all its samples as they are inserted (a run is always
-- inserted in one block, and the view groups each block by run): what the
-- sections that count runs over every phase need — how the run's first
-- request to the HTTP/3 origin went (first contact) and the script's own
-- errors — so that they read one row per run instead of grouping every
-- raw row of the window by run id, which was most of a complete report's
-- time on a large table. The runs table holds only runs that reached
-- their parallel batches; this one also those cut short before.
--   h3_wanted    the run made a request to the HTTP/3 origin
--   first_known  its first request (seq 0, the first warm-up) succeeded
--                with a known protocol
--   first_h3     … over h3
--   later_h3     a later request to the HTTP/3 origin succeeded over h3
--   collector    the POP that served its first request to the HTTP/3
--                origin (the samples' collector can differ within a run)
--   alt_svc      whether the page's own loads could have taught the
--                browser the HTTP/3 origin's Alt-Svc before that first
--                request (samples.alt_svc): 1 tells a first request over
--                h3 known before the page, 2 learnt from the script's own
--                load; 0 not recorded
-- Exactly once like samples (store.Stored); browser runs only: source is
-- a constant, as in the runs table.
CREATE TABLE IF NOT EXISTS {{.Local "run_facts"}}{{.OnCluster}}
(
{{template "run columns" .}}
    collector       String,
    beacon_version  String,
    bot             UInt8,
    h3_wanted       UInt8,
    first_known     UInt8,
    first_h3        UInt8,
    later_h3        UInt8,
    script_errors_idle UInt16,
    script_errors_warmup UInt16,
    script_errors_batch UInt16,
    script_errors_timing UInt16,
    script_errors_send UInt16,
{{- if .Since 59}}
    alt_svc         UInt8,
{{- end}}
{{template "per-run table" (.Over "run_facts" "cityHash64(toString(run_id))")}}
