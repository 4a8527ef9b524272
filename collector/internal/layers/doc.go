// Package layers holds the tests of the packages' layering and of
// ARCHITECTURE.md's word on it: which of the product's packages each may
// import, which it does, and the files the document names.
package layers
