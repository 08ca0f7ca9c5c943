//go:build race

package workbench_test

// raceDetector reports whether the tests run under the race detector,
// whose slowdown splits some rounds of overlapping requests in two.
const raceDetector = true
