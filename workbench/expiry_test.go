package workbench

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/cryptotest"
	"time"

	"github.com/cairnstore/cairn/workbench/internal/core"

	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// TestRetryRowsExpire runs publications of bodies in blocks and inline
// (creates, replaces, appends, edits) with every commit folding at once
// and a dedupe window of 3 commits, so the retry-only rows expire as
// folds rewrite their pages (the ids are fixed, so which Operation rows
// share a shard, and expire, is too). Every file still reads its exact body, the
// reference accounting still holds, no StagedObject row is left (each
// expired at its own commit's fold), some Operation rows expired, and
// every one left is a Published Publish operation.
func TestRetryRowsExpire(t *testing.T) {
	// Fixed operation ids (their random bytes, and the clock that gives
	// their first six): which of them share a shard.
	cryptotest.SetGlobalRandom(t, 11)
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now := func() time.Time { return clock }
	ctx := context.Background()
	s := openInternal(t, mem.NewBucket(), core.Options{BlockSize: 1 << 10, Engine: head.Options{MaxDeltaBytes: 1, DedupeWindow: 3, Now: now}})
	want := map[string]string{}
	publications := 0
	put := func(path, text string, replace bool) {
		t.Helper()
		publications++
		in := fmt.Sprintf(`{"id":"wb","section":"outputs","path":%q,"text":%q,"replace":%v}`, path, text, replace)
		if out, ok := s.Call(ctx, "workbench_put_file", []byte(in)); !ok {
			t.Fatalf("put %s: %s", path, out)
		}
		want[path] = text
	}
	for i := range 12 {
		big := strings.Repeat(fmt.Sprintf("%04d-", i), 1200) // 6 KB: blocks
		put(fmt.Sprintf("big%02d.txt", i), big, false)
		put(fmt.Sprintf("small%02d.txt", i), fmt.Sprint("small ", i), false)
	}
	for i := range 12 {
		switch i % 3 {
		case 0:
			put(fmt.Sprintf("big%02d.txt", i), strings.Repeat("r", 5000), true)
		case 1:
			in := fmt.Sprintf(`{"id":"wb","section":"outputs","path":"big%02d.txt","text":"tail"}`, i)
			if out, ok := s.Call(ctx, "workbench_append", []byte(in)); !ok {
				t.Fatalf("append: %s", out)
			}
			want[fmt.Sprintf("big%02d.txt", i)] += "tail"
			publications++
		case 2:
			in := fmt.Sprintf(`{"id":"wb","section":"outputs","path":"small%02d.txt","old_string":"small","new_string":"edited"}`, i)
			if out, ok := s.Call(ctx, "workbench_edit", []byte(in)); !ok {
				t.Fatalf("edit: %s", out)
			}
			want[fmt.Sprintf("small%02d.txt", i)] = strings.Replace(want[fmt.Sprintf("small%02d.txt", i)], "small", "edited", 1)
			publications++
		}
	}
	for path, text := range want {
		if got := BodyForTest(t, s, "wb", "outputs/"+path); !bytes.Equal(got, []byte(text)) {
			t.Fatalf("%s: %d bytes, want %d", path, len(got), len(text))
		}
	}
	CheckReferencesForTest(t, s)
	if staged := ScanForTest(t, s, nokv.FamilyStagedObject, nil); len(staged) != 0 {
		t.Fatalf("%d StagedObject rows left after their folds", len(staged))
	}
	ops := ScanForTest(t, s, nokv.FamilyOperation, nil)
	t.Logf("%d of %d Operation rows left", len(ops), publications)
	if len(ops) >= publications {
		t.Fatalf("all %d Operation rows left: none expired", len(ops))
	}
	for _, rec := range ops {
		op, err := nokv.DecodePublishOperation(rec.Value)
		if err != nil || op.Phase != nokv.PublishPhasePublished {
			t.Fatalf("operation row %x: %+v, %v", rec.Key, op, err)
		}
	}
}

// TestRequestIDsOrderByTime: the engine request ids of tool calls sort
// by the Service's clock and, within one millisecond, are distinct;
// every one sorts after any random hexadecimal id, so that the dedupe
// records of a store's older releases come first in their shards.
func TestRequestIDsOrderByTime(t *testing.T) {
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := openInternal(t, mem.NewBucket(), core.Options{Now: func() time.Time { return clock }})
	seen := map[string]bool{}
	prev := strings.Repeat("f", 32) // the largest id of earlier releases
	for step := range 50 {
		var same []string
		for range 20 {
			id := s.RequestID()
			if seen[id] {
				t.Fatalf("id %q twice", id)
			}
			seen[id] = true
			same = append(same, id)
		}
		for _, id := range same {
			if id <= prev {
				t.Fatalf("step %d: id %q sorts before %q, of an earlier millisecond", step, id, prev)
			}
		}
		prev = slices.Max(same)
		clock = clock.Add(time.Duration(1+step%3) * time.Millisecond)
	}
}
