package history

import (
	"bytes"
	"slices"
	"testing"

	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// TestChangedPaths: the paths a commit reads are those the events at its
// parent's commit version or later name (a put that joined the parent's
// group after its command shares that version), of its workbench and
// incarnation only; an event the feed cannot turn into paths (the
// workbench created or restored again), too many events or too long a
// gap make it read the whole workbench.
func TestChangedPaths(t *testing.T) {
	root := nokv.RootID{1}
	inc, other := nokv.IncarnationID{2}, nokv.IncarnationID{3}
	var recs []shards.Record
	add := func(version uint64, ev nokv.ChangeEvent) {
		seq := uint32(0)
		for _, r := range recs {
			if k, _ := nokv.ParseChangeEventKey(r.Key); k.CommitVersion == version {
				seq++
			}
		}
		k, err := nokv.ChangeEventKey{Root: root, CommitVersion: version, Sequence: seq}.Encode()
		if err != nil {
			t.Fatal(err)
		}
		v, err := ev.Encode()
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, shards.Record{Key: k, Value: v})
		slices.SortFunc(recs, func(a, b shards.Record) int { return bytes.Compare(a.Key, b.Key) })
	}
	path := func(wb string, in nokv.IncarnationID, version uint64, p string) {
		ev := nokv.ChangeEvent{WorkbenchID: wb, Incarnation: in, Kind: nokv.ChangeEventKindPathCreated, Path: []string{"outputs", p},
			After: &nokv.EventProjection{Generation: 1, DigestURI: "sha256:" + string(bytes.Repeat([]byte("ab"), 32))}}
		add(version, ev)
	}
	scan := func(prefix, after []byte, limit int) ([]shards.Record, error) {
		var out []shards.Record
		for _, r := range recs {
			if bytes.HasPrefix(r.Key, prefix) && (after == nil || bytes.Compare(r.Key, after) > 0) {
				out = append(out, r)
				if len(out) == limit {
					break
				}
			}
		}
		return out, nil
	}
	names := func(keys [][]byte) []string {
		var out []string
		for _, k := range keys {
			pk, err := nokv.ParsePathCurrentKey(k)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, pk.Path[1])
		}
		return out
	}
	path("wb", inc, 299, "before")          // the parent has it
	path("wb", inc, 300, "same-group")      // the parent's version
	path("wb", inc, 301, "b")               // after it
	path("wb", inc, 301, "b")               // named twice
	path("other", inc, 302, "not-this-one") // another workbench
	path("wb", inc, 700, "a")               // two groups on
	keys, ok, err := changedPaths(scan, root, "wb", inc, 300, 800)
	if err != nil || !ok {
		t.Fatalf("changedPaths: %v %v", ok, err)
	}
	if got := names(keys); !slices.Equal(got, []string{"a", "b", "same-group"}) {
		t.Fatalf("changed paths %q", got)
	}
	// A path event of another incarnation of the workbench: it was
	// created again, and the feed does not say what its paths were.
	path("wb", other, 303, "old-incarnation")
	if _, ok, _ := changedPaths(scan, root, "wb", inc, 300, 800); ok {
		t.Fatal("an event of another incarnation was taken as no change")
	}
	if _, ok, _ := changedPaths(scan, root, "wb", inc, 304, 800); !ok {
		t.Fatal("an event before the parent stopped the commit reading the changes")
	}
	// A restore of the workbench writes its paths without events.
	commit := nokv.CommitID{9}
	add(750, nokv.ChangeEvent{WorkbenchID: "wb", Incarnation: inc, Kind: nokv.ChangeEventKindWorkspaceRestored, Commit: &commit})
	if _, ok, _ := changedPaths(scan, root, "wb", inc, 304, 800); ok {
		t.Fatal("a restore's event was taken as no change")
	}
	// The restore that sealed the parent, in the parent's command, is
	// the parent's own event.
	if keys, ok, _ := changedPaths(scan, root, "wb", inc, 750, 800); !ok || len(keys) != 0 {
		t.Fatalf("the parent's own restore event: %v, %q", ok, names(keys))
	}
	if _, ok, _ := changedPaths(scan, root, "wb", inc, 300, 300+maxChangeGroups*256); ok {
		t.Fatal("a gap of maxChangeGroups groups was read")
	}
}
