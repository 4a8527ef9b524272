-- The NEL reports table, as schema/nel_reports.sql defines it still.
{{template "schema/nel_reports.sql" .}}
