package beacon

//go:generate go run ./internal/build
