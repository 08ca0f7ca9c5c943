package nokv

import (
	"encoding/binary"
	"testing"
	"time"
)

// millis returns the time prefix of a time-ordered id.
func millis(b [16]byte) int64 {
	var w [8]byte
	copy(w[2:], b[:6])
	return int64(binary.BigEndian.Uint64(w[:]))
}

// Revision and operation ids carry the time they were drawn in their
// first six bytes, so that ids drawn later sort after, and are unique by
// their random rest alone.
func TestNewIDsAreOrderedByTime(t *testing.T) {
	before := time.Now().UnixMilli()
	var ids [][16]byte
	for range 2000 {
		ids = append(ids, NewRevisionID(time.Now()), NewOperationID(time.Now()))
	}
	after := time.Now().UnixMilli()
	seen := map[[16]byte]bool{}
	tails := map[[10]byte]bool{}
	for i, id := range ids {
		if ms := millis(id); ms < before || ms > after {
			t.Fatalf("id %d (%x): time %d outside [%d, %d]", i, id, ms, before, after)
		}
		if i > 0 && millis(id) < millis(ids[i-1]) {
			t.Fatalf("id %d (%x) sorts before the one drawn ahead of it (%x)", i, id, ids[i-1])
		}
		if seen[id] {
			t.Fatalf("id %x drawn twice", id)
		}
		seen[id] = true
		tails[[10]byte(id[6:])] = true
	}
	// The rest is random: 4,000 draws of 80 bits do not repeat.
	if len(tails) != len(ids) {
		t.Fatalf("%d distinct random parts in %d ids", len(tails), len(ids))
	}
}
