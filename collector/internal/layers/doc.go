// Package layers holds the test of the packages' layering: which of the
// product's packages each may import (ARCHITECTURE.md, "Packages").
package layers
