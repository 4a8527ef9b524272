// Package lab emulates regions on one Linux machine: a network namespace per
// region and one for the collector, joined by TUN pairs and a userspace pump
// that adds each region's delay, jitter, loss, rate and UDP blocking.
//
// The regions come from a file (deploy/lab/regions.json, read by
// LoadRegions); New builds the namespaces and starts the pumps; Close removes
// them. Code that must run inside a namespace — a listener in the collector's,
// a browser or a probe in a region's — uses Namespace.Do. README.md beside
// this file describes the design and what was measured on the development
// machine.
package lab
