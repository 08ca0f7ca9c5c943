package workbench

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/workbench/internal/core"

	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// TestOpenRefusesOlderValueFormat: a store written five value formats
// before the Service's (today 1, before small bodies moved inline into
// their manifest rows) fails closed at open, with an error that says so;
// the four formats just before are read (TestGoldenStore).
func TestOpenRefusesOlderValueFormat(t *testing.T) {
	ctx := context.Background()
	b := mem.NewBucket()
	old := nokv.Schema()
	old.Marker.ValueFormatVersion = core.OldestValueFormat - 1
	if v := core.TestValueFormat; v != 0 {
		// The Service creates shards of v, and reads the four before.
		if v-5 < 1 {
			t.Skipf("value format %d: no older value format to refuse", v)
		}
		old.Marker.ValueFormatVersion = uint64(v - 5)
	}
	st, err := head.Open(ctx, b, shards.ShardID(core.Derive16("shard", "test")), old, head.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	st.Close()
	s, err := Open(ctx, b, core.Options{AgentID: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, werr := s.Dispatch(ctx, "workbench_stat", []byte(`{"id":"wb"}`))
	if werr == nil || werr.Code != "InvalidState" || !strings.Contains(werr.Message, "another format") || !errors.Is(werr.Cause, head.ErrSchemaMismatch) {
		t.Fatalf("stat of a value format %d store: %v, want InvalidState from a schema mismatch", old.Marker.ValueFormatVersion, werr)
	}
	t.Log(werr.Message)
}
