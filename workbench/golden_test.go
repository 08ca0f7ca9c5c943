package workbench_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"testing/cryptotest"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/workbench"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/golden-objects.txt")

// TestGoldenObjects runs a fixed script of tool calls with a fixed clock and
// a seeded random source, then lists every object the bucket holds with the
// SHA-256 of its bytes. The list must match testdata/golden-objects.txt:
// heads, roots, tables, shard objects and blocks keep their exact bytes
// unless the format is changed on purpose (then rerun with -update-golden
// and say why in the commit).
func TestGoldenObjects(t *testing.T) {
	if v := workbench.TestValueFormat(); v != 0 {
		// The bytes pinned are today's format's: write them so.
		workbench.ValueFormatForTest(0)
		defer workbench.ValueFormatForTest(v)
	}
	cryptotest.SetGlobalRandom(t, 7)
	ctx := context.Background()
	b := mem.NewBucket()
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	opts := workbench.Options{AgentID: "golden", BlockSize: 64}
	opts.Engine.NoGroupCommit = true
	opts.Engine.Now = func() time.Time {
		clock = clock.Add(time.Second)
		return clock
	}
	// The Service's clock stamps its request ids, which key the engine's
	// dedupe records.
	opts.Now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	s, err := workbench.Open(ctx, b, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	script := []struct{ tool, input string }{
		{"workbench_create", `{"id":"wb-a"}`},
		{"workbench_create", `{"id":"wb-b"}`},
		{"workbench_put_file", `{"id":"wb-a","section":"outputs","path":"report.txt","text":"Hello world\nsecond\n"}`},
		{"workbench_put_file", `{"id":"wb-a","section":"input","path":"data/rows.jsonl","text":"{\"a\":1}\n{\"a\":2}\n"}`},
		{"workbench_put_file", `{"id":"wb-a","section":"input","path":"data/big.txt","text":"` + strings.Repeat("0123456789abcdef", 20) + `"}`},
		{"workbench_append", `{"id":"wb-a","section":"outputs","path":"report.txt","text":"third\n"}`},
		{"workbench_append", `{"id":"wb-a","section":"logs","path":"run.log","text":"start\n"}`},
		{"workbench_edit", `{"id":"wb-a","section":"outputs","path":"report.txt","old_string":"world","new_string":"cairn"}`},
		{"workbench_put_file", `{"id":"wb-a","section":"outputs","path":"report.txt","text":"replaced\n","replace":true}`},
		{"workbench_put_file", `{"id":"wb-b","section":"input","path":"a/b/c.md","text":"# title\n"}`},
	}
	for _, step := range script {
		out, ok := s.Call(ctx, step.tool, []byte(step.input))
		if !ok {
			t.Fatalf("%s %s: %s", step.tool, step.input, out)
		}
	}

	var got strings.Builder
	var token string
	for {
		page, err := b.List(ctx, bucket.ListOptions{PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Objects {
			body, _, err := b.Get(ctx, o.Key)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(body)
			fmt.Fprintf(&got, "%s %s %d\n", o.Key, hex.EncodeToString(sum[:]), len(body))
		}
		if page.NextPageToken == "" {
			break
		}
		token = page.NextPageToken
	}

	const path = "testdata/golden-objects.txt"
	if *updateGolden {
		if err := os.WriteFile(path, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != string(want) {
		t.Fatalf("objects differ from %s:\ngot:\n%s\nwant:\n%s", path, got.String(), want)
	}
}
