INSERT INTO samples (
    time, site, run_id, seq, phase, want, got,
    start_ms, duration_ms, dns_ms, connect_ms, tls_ms, ttfb_ms, download_ms,
    reused, transfer_size, error,
    srv_present, srv_proto, srv_handle_ms, srv_rtt_ms, srv_min_rtt_ms, srv_rttvar_ms,
    srv_lost, srv_conn_id, srv_conn_reqs, srv_resumed, srv_early,
    partial, page_origin, beacon_version,
    param_parallel, param_warmup, param_bytes, param_order, param_trigger,
    continent, country, subdivision, city_id, asn, as_org,
    browser, browser_major, platform, mobile, ect, net_rtt_ms, net_downlink, bot
)
