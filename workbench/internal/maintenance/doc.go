// Package maintenance holds what operators run against a deployment
// root: fsck's record checks (fsck*.go), the collection of replaced
// revisions (collect.go), and what the sweep and the pins need of the
// Workbench (gc.go: BlockRefs, SweepOptions, Layout; live.go:
// PinBlockRefs).
package maintenance
