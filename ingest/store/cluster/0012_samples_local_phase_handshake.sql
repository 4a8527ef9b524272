-- The agent's handshake phase (migrations/0032).
{{template "migrations/0032_samples_phase_handshake.sql" .}}
