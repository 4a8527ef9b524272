package queries

//go:generate go run ./internal/dashbuild/build
