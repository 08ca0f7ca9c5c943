package bench

import (
	"strings"
	"testing"
	"time"
)

// TestThroughputNoteLatenciesInMilliseconds: a throughput row writes both
// latencies in milliseconds whatever their size, so that runs of a few
// seconds and of twenty read alike.
func TestThroughputNoteLatenciesInMilliseconds(t *testing.T) {
	row := &Row{}
	tally := throughputTally{offered: 10, acked: 10, rate: 9.5, p50: 1248400 * time.Microsecond, p99: 18600 * time.Millisecond}
	tally.record(row, Config{Rate: 10, Duration: time.Second})
	if !strings.Contains(row.Notes, "p50 1248.4ms p99 18600.0ms;") {
		t.Fatalf("note %q: want both latencies in milliseconds", row.Notes)
	}
}
