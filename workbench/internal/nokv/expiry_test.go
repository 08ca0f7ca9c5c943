package nokv_test

import (
	"testing"

	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// TestOperationExpiry: a Published Publish operation expires once its
// commit version is more than the dedupe window before the fold; not
// within the window, not for a reserved path, not in any other phase or
// kind, and never when it does not decode.
func TestOperationExpiry(t *testing.T) {
	rule := nokv.Families().Expiry(nokv.FamilyOperation)
	if rule == nil {
		t.Fatal("operation has no expiry rule")
	}
	key := func(kind nokv.OperationKind) []byte {
		k, err := nokv.OperationKey{Root: tRoot, Kind: kind, ID: tOp}.Encode()
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	value := func(edit func(*nokv.PublishOperation)) []byte {
		op := fxPublish // commit version 9
		edit(&op)
		b, err := op.Encode()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	at := func(seq uint64) shards.ExpiryClock { return shards.ExpiryClock{Sequence: seq, DedupeWindow: 5} }
	published := value(func(*nokv.PublishOperation) {})
	cases := []struct {
		name  string
		key   []byte
		value []byte
		seq   uint64
		want  bool
	}{
		{"within the window", key(nokv.OperationKindPublish), published, 14, false},
		{"past the window", key(nokv.OperationKindPublish), published, 15, true},
		{"run manifest", key(nokv.OperationKindPublish), value(func(op *nokv.PublishOperation) { op.Path = []string{"metadata", "run_manifest.json"} }), 100, false},
		{"restore manifest", key(nokv.OperationKindPublish), value(func(op *nokv.PublishOperation) { op.Path = []string{"metadata", "restore_manifest.json"} }), 100, false},
		{"quarantined", key(nokv.OperationKindPublish), value(func(op *nokv.PublishOperation) { op.Phase = nokv.PublishPhaseQuarantined }), 100, false},
		{"cleaning", key(nokv.OperationKindPublish), value(func(op *nokv.PublishOperation) {
			op.Phase, op.Result = nokv.PublishPhaseCleaning, nil
		}), 100, false},
		{"build commit", key(nokv.OperationKindBuildCommit), published, 100, false},
		{"undecodable", key(nokv.OperationKindPublish), []byte{1, 2, 3}, 100, false},
	}
	for _, c := range cases {
		if got := rule(c.key, c.value, at(c.seq)); got != c.want {
			t.Errorf("%s at sequence %d: expired %v, want %v", c.name, c.seq, got, c.want)
		}
	}
}

// TestStagedObjectExpiry: a StagedObject row expires at any fold once it
// is Uploaded and Owned (its publication landed and manifest rows own
// its block); in any other state, or undecodable, it is kept.
func TestStagedObjectExpiry(t *testing.T) {
	rule := nokv.Families().Expiry(nokv.FamilyStagedObject)
	if rule == nil {
		t.Fatal("staged_object has no expiry rule")
	}
	k, err := nokv.StagedObjectKey{Root: tRoot, Operation: tOp, Sequence: 0}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	enc := func(so nokv.StagedObject) []byte {
		b, err := so.Encode()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	at := shards.ExpiryClock{Sequence: 2, DedupeWindow: 1_000_000}
	if !rule(k, enc(fxStaged), at) {
		t.Error("an Uploaded, Owned row is kept")
	}
	quarantined := fxStaged
	quarantined.Cleanup = nokv.StagedCleanupStateQuarantined
	ambiguous := fxStaged
	ambiguous.Provider = nokv.StagedProviderStateAmbiguous
	for _, v := range [][]byte{enc(quarantined), enc(ambiguous), {9}} {
		if rule(k, v, at) {
			t.Errorf("row %x expired", v)
		}
	}
}

// TestOnlyRetryRowsExpire: no other NoKV family carries an expiry rule.
func TestOnlyRetryRowsExpire(t *testing.T) {
	for _, f := range nokv.Families().Families() {
		has := nokv.Families().Expiry(f) != nil
		if want := f == nokv.FamilyOperation || f == nokv.FamilyStagedObject; has != want {
			t.Errorf("family %s: expiry rule %v, want %v", nokv.Families().Name(f), has, want)
		}
	}
}
