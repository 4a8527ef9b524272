-- The pinned settings (settings.go) that this server has: each is set on
-- a connection only where the server knows it, because a server refuses a
-- setting it does not know (18.16 has neither async_insert nor
-- date_time_input_format).
SELECT name, value FROM system.settings WHERE has(?, name)
