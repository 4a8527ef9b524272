// Package render writes a report for people and tools: the terminal
// table, CSV, JSON, the dashboard's page and its self-contained HTML
// twin, a comparison's text, and Grafana's dashboard over the report's
// SQL. It reads the model of package queries and computes nothing.
package render

//go:generate go run ./internal/dashbuild/build
